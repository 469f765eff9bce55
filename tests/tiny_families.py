"""Tiny random Chameleon, Janus-Pro and Emu3 models and Hugging Face's outputs on them: the reference for
tests/test_family_parity.cpp (run there at test time, in a fresh directory; nothing is downloaded).

For each family FAM it writes FAM/ (save_pretrained, sharded safetensors with an index), FAM_draft/ (SD's draft
model: the same network with perturbed weights; save_draft) and FAM_ref/NAME.npy:
  prompts   [2, Lmax] int64, row r's prompt in its first lens[r] entries (different lengths on purpose)
  lens      [2]
  codes     [2, N] int64 image codes (0 .. V-1)
  hidden_r  [N + 1, D] row r's final-normed hidden states at the N + 1 positions that predict image tokens
            0 .. N (the prompt's last; each token's own, or its end-of-line token's where it ends a row)
  logits_r  [N + 1, V] the logits over the image codes there
Emu3's image rows end in an end-of-line token (EOL[fam]), as in its official generation; the others' do not.
  cond_r, null_r  row r's prompt and its unconditional prompt (the family's rule: Janus-Pro's BOS, pads,
                  begin-of-image; Anole's BOS and begin-of-image alone; Emu3's negative prompt)
  vq_codes, vq_pixels  (Janus-Pro) [2, GRID^2] codes and the pixels its VQ decodes them to
Chameleon's VQGAN has no decoder in transformers; vqgan_test() writes chameleon_vq/vqgan.ckpt in the layout of
Meta's vqgan.ckpt (torch.save of {"state_dict": ...}, taming's names, decoder levels counted from the highest
resolution, the loss's networks beside) from transformers' Chameleon VQ encoder and the same taming decoder as
Janus-Pro's without attention in its levels, and chameleon_ref/vqgan_*.npy: images, the codes transformers'
encoder and quantiser give them, and the pixels the decoder gives codes.
  zipar_greedy    [2, GRID^2] the same prompts' greedy tokens from ZipAR with window 2 (zipar_greedy_cfg)
  greedy_cfg      [2, GRID^2] the tokens of a greedy loop under classifier-free guidance (scale CFG[fam]) that
                  follows the family's official generation code: both streams' logits at every step from the
                  whole sequence so far, u + s (c - u), argmax, the token appended to both streams (and the
                  end-of-line token after a row's last)
  caption_cond_r, caption_null_r, caption_greedy
                  the same from text: each family's template around CAPTIONS[r] and its unconditional text,
                  tokenised by a tokenizer of the family's shape trained here (tests/tiny_tokenizers.py; written to
                  FAM_tokenizer/) with Hugging Face tokenizers, or for Emu3 tiktoken
Emu3's MoVQ: movq_test() writes emu3_vq/model.safetensors in the layout of BAAI's Emu3-VisionTokenizer (its
attention as 1x1 convolutions q, k, v, proj_out; decoder.mid, decoder.up.N) from transformers' Emu3VQVAE, and
emu3_ref/movq_codes.npy, movq_pixels.npy: codes and the image (frame 0) transformers decodes them to, in float64;
emu3_vq_hf/model.safetensors: the same VQ as transformers' Emu3-Gen-hf checkpoint holds it (vqmodel.*).
Weights are drawn wider than the initialisation's (std 0.3, norms around 1) so every part of the model shows.
"""
import copy
import os
import sys

import numpy as np
import torch
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_tokenizers  # noqa: E402
from transformers import (ChameleonConfig, ChameleonForConditionalGeneration, Emu3Config,
                          Emu3ForConditionalGeneration, JanusConfig, JanusForConditionalGeneration)

TEXT_VOCAB, OFFSET, CODES, DIM, HEADS, KV_HEADS, LAYERS, FFN, N = 600, 4, 512, 64, 4, 2, 2, 96, 10
GRID, CFG, EOL = 4, {"chameleon": 3.0, "janus": 5.0, "emu3": 3.0}, {"emu3": TEXT_VOCAB - 3}
BOS, PAD, BOI = 1, 0, TEXT_VOCAB - 2  # ids of the tiny vocabularies' special tokens


def widen(model):
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            else:
                p.copy_(0.3 * torch.randn_like(p))


def sequences(rng):
    lens = np.array([5, 9])
    prompts = np.zeros((2, lens.max()), np.int64)
    for r, n in enumerate(lens):  # text tokens only: ids after the image tokens
        prompts[r, :n] = rng.integers(OFFSET + CODES, TEXT_VOCAB, n)
    codes = rng.integers(0, CODES, (2, N))
    return prompts, lens, codes


def chameleon():
    vocab_map = {"<image>": TEXT_VOCAB - 1}
    vq = dict(embed_dim=8, num_embeddings=CODES, latent_channels=32, base_channels=32, channel_multiplier=[1, 1],
              resolution=32, attn_resolutions=[], num_res_blocks=1)
    config = ChameleonConfig(vocab_size=TEXT_VOCAB, hidden_size=DIM, intermediate_size=FFN, num_hidden_layers=LAYERS,
                             num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=256,
                             rms_norm_eps=1e-5, rope_theta=10000.0, vocabulary_map=vocab_map, vq_config=vq)
    model = ChameleonForConditionalGeneration(config).eval()
    widen(model)

    def run(ids, codes):
        h = model.model(input_ids=torch.cat([ids, codes + OFFSET], 1)).last_hidden_state
        return h, model.lm_head(h)[..., OFFSET:OFFSET + CODES]
    return model, run


def janus():
    text = dict(model_type="llama", vocab_size=TEXT_VOCAB, hidden_size=DIM, intermediate_size=FFN,
                num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=10000.0)
    vision = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=2, image_size=16 * GRID,
                  patch_size=16)
    vq = dict(embed_dim=8, num_embeddings=CODES, latent_channels=32, base_channels=32, channel_multiplier=[1, 1],
              num_res_blocks=1, projection_dim=DIM, image_token_embed_dim=DIM, num_patches=GRID)
    config = JanusConfig(text_config=text, vision_config=vision, vq_config=vq, image_token_id=TEXT_VOCAB - 1)
    model = JanusForConditionalGeneration(config).eval()
    widen(model)

    def run(ids, codes):
        text_embeds = model.model.language_model.get_input_embeddings()(ids)
        image_embeds = model.prepare_embeddings_for_image_generation(codes)
        h = model.model.language_model(inputs_embeds=torch.cat([text_embeds, image_embeds], 1)).last_hidden_state
        return h, model.model.generation_head(h)
    return model, run


def emu3():
    text = dict(vocab_size=TEXT_VOCAB, hidden_size=DIM, intermediate_size=FFN, num_hidden_layers=LAYERS,
                num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=256,
                rms_norm_eps=1e-5, rope_theta=1e6, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    vq = dict(embed_dim=4, codebook_size=CODES, base_channels=32, channel_multiplier=[1, 1], num_res_blocks=1,
              attn_resolutions=[], latent_channels=4, in_channels=3, out_channels=3, temporal_downsample_factor=4,
              double_latent=False)
    config = Emu3Config(text_config=text, vq_config=vq, vocabulary_map={"<image>": TEXT_VOCAB - 1})
    model = Emu3ForConditionalGeneration(config).eval()
    widen(model)

    def run(ids, codes):
        h = model.model.text_model(input_ids=torch.cat([ids, image_ids(codes[0], EOL["emu3"])], 1)).last_hidden_state
        return h, model.lm_head(h)[..., OFFSET:OFFSET + CODES]
    return model, run


def ends_row(k):
    return k % GRID == GRID - 1 and k < GRID * GRID - 1


def image_ids(codes, eol):
    """Image codes [n] as token ids [1, n'], each row's last followed by the end-of-line token."""
    ids = []
    for k, c in enumerate(codes.tolist()):
        ids.append(c + OFFSET)
        if ends_row(k):
            ids.append(eol)
    return torch.tensor([ids], dtype=torch.int64)


def predicting(prompt_len, n, eol):
    """Sequence indices of the outputs that predict image tokens 0 .. n."""
    at, index = [prompt_len - 1], prompt_len - 1
    for k in range(n):
        index += 2 if eol is not None and ends_row(k) else 1
        at.append(index)
    return at


def cfg_prompts(fam, text, rng):
    """The family's conditional and unconditional prompts around a text."""
    cond = [BOS] + list(text) + [BOI]
    if fam == "janus":  # generation_inference.py: everything between BOS and begin-of-image becomes a pad
        return cond, [BOS] + [PAD] * len(text) + [BOI]
    if fam == "emu3":  # a negative prompt of its own length
        return cond, [BOS] + rng.integers(OFFSET + CODES, TEXT_VOCAB - 3, 3).tolist() + [BOI]
    return cond, [BOS, BOI]  # Anole: the unconditional stream sees the image's own tokens only


def greedy_cfg(run, cond, null, scale):
    codes = torch.zeros((1, 0), dtype=torch.int64)
    for _ in range(GRID * GRID):  # run lays out the codes so far with their end-of-line tokens
        c = run(torch.tensor([cond]), codes)[1][0, -1]
        u = run(torch.tensor([null]), codes)[1][0, -1]
        codes = torch.cat([codes, (u + scale * (c - u)).argmax().view(1, 1)], 1)
    return codes[0]


def zipar_parts(fam, model):
    """The family's language model, its embeddings of prompt ids and of image codes, and its image head."""
    lm = {"chameleon": lambda: model.model, "janus": lambda: model.model.language_model,
          "emu3": lambda: model.model.text_model}[fam]()
    embed_text = lm.get_input_embeddings()
    if fam == "janus":
        return lm, embed_text, model.prepare_embeddings_for_image_generation, model.model.generation_head
    return (lm, embed_text, lambda codes: embed_text(codes + OFFSET),
            lambda h: model.lm_head(h)[..., OFFSET:OFFSET + CODES])


def zipar_greedy_cfg(fam, model, cond, null, scale, s):
    """Greedy ZipAR under guidance with window s < GRID, written from ZipAR's schedule: row 0 autoregressive,
    row 1 once row 0 is complete, row r + 1 once row r has s tokens; each step feeds every active row's newest
    token at its cell (a row's first token is predicted from the last cell of the row above: its real token if
    that row is complete, else the newest token of the row two above as a placeholder, replaced by the real
    token when the row above completes) and attends causally by cell over what has been written (unwritten
    cells unseen). Each stream keeps a cache of transformers' own (DynamicCache); each step is one forward with
    a 4D mask. Emu3's row-ending cells bring their end-of-line token, at the cell's sequence position + 1."""
    from transformers import DynamicCache
    lm, embed_text, embed_code, head = zipar_parts(fam, model)
    eol, W, N = EOL.get(fam), GRID, GRID * GRID
    streams = []
    for prompt in (cond, null):
        cache = DynamicCache()
        h = lm(inputs_embeds=embed_text(torch.tensor([prompt])), past_key_values=cache,
               use_cache=True).last_hidden_state
        streams.append((cache, len(prompt), head(h[:, -1:])))
    tokens = torch.zeros(N, dtype=torch.int64)

    def guide(c, u):
        return (u + scale * (c - u)).argmax(-1)
    tokens[0] = guide(streams[0][2], streams[1][2])[0, 0]
    count, started = [1] + [0] * (W - 1), [True] + [False] * (W - 1)
    finished, written = [], []  # rows completed by the last step; the cache's image entries: [cell, alive]
    while count[-1] < W:
        feeds = []  # (cell, row it predicts or -1, cell whose token is fed, placeholder)
        for r in range(W):
            if not started[r] or count[r] == W:
                continue
            if count[r] > 0:
                feeds.append((r * W + count[r] - 1, r, r * W + count[r] - 1, False))
            elif count[r - 1] == W:
                feeds.append((r * W - 1, r, r * W - 1, False))
                finished = [f for f in finished if f != r - 1]
            else:
                feeds.append((r * W - 1, r, (r - 2) * W + count[r - 2] - 1, True))
        feeds += [((r + 1) * W - 1, -1, (r + 1) * W - 1, False) for r in finished]
        finished = []
        feeds.sort()
        for cell, _, _, placeholder in feeds:
            if not placeholder:
                for w in written:
                    w[1] = w[1] and w[0] != cell
        block = []  # (feed index, cell, is the end-of-line entry)
        for i, (cell, _, _, _) in enumerate(feeds):
            block.append((i, cell, False))
            if eol is not None and ends_row(cell):
                block.append((i, cell, True))
        ids = torch.tensor([[tokens[feeds[i][2]].item() for i, _, _ in block]])
        is_eol = torch.tensor([[e for _, _, e in block]])
        outs = []
        for cache, P, _ in streams:
            L, T = P + len(written), len(block)
            mask = torch.full((1, 1, T, L + T), float("-inf"))
            for q, (i, cell, q_eol) in enumerate(block):
                mask[0, 0, q, :P] = 0
                for j, (wcell, alive) in enumerate(written):
                    if alive and wcell < cell:
                        mask[0, 0, q, P + j] = 0
                for k, (i2, _, k_eol) in enumerate(block):  # a node's end-of-line entry sees it, not the reverse
                    if i2 < i or (i2 == i and (k == q or (q_eol and not k_eol))):
                        mask[0, 0, q, L + k] = 0
            embeds = torch.where(is_eol.unsqueeze(-1), embed_text(torch.full_like(ids, eol or 0)), embed_code(ids))
            cells = torch.tensor([[cell for _, cell, _ in block]])
            position = P + cells + (cells // W + is_eol.long() if eol is not None else 0)
            h = lm(inputs_embeds=embeds, attention_mask=mask, position_ids=position, past_key_values=cache,
                   use_cache=True).last_hidden_state
            outs.append(head(h))
        written += [[cell, True] for _, cell, _ in block]
        for i, (cell, r, _, _) in enumerate(feeds):
            if r < 0:
                continue
            q = max(k for k, (i2, _, _) in enumerate(block) if i2 == i)  # the end-of-line entry where there is one
            tokens[r * W + count[r]] = guide(outs[0][:, q], outs[1][:, q])[0]
            started[r] = True
            count[r] += 1
            if count[r] == W and r + 1 < W:
                finished.append(r)
        for r in range(W - 1):
            if not started[r + 1] and count[r] >= (W if r == 0 else s):
                started[r + 1] = True
                break
    return tokens


CAPTIONS = ["a red bus", "Ünïcödé café: 2 cats 👍🏽 at dusk"]
# (template, unconditional text or None for Janus-Pro's pads): each family's as its configs write them.
TEMPLATES = {
    "chameleon": ("<s>Generate an image of 64x64 according to the following prompt:\n{prompt}<reserved08706>"
                  "<racm3:break><reserved08802><reserved08802>", "<racm3:break><reserved08802><reserved08802>"),
    "janus": ("<｜begin▁of▁sentence｜><|User|>: {prompt}\n\n<|Assistant|>:<begin_of_image>", None),
    "emu3": ("<|extra_203|>{prompt} masterpiece, film grained, best quality.<|image start|>4*4<|image token|>",
             "<|extra_203|>lowres, bad anatomy, blurry.<|image start|>4*4<|image token|>"),
}


def caption_prompts(fam):
    """Each caption's conditional and unconditional ids, from the family's tokenizer files in FAM_tokenizer/."""
    directory = fam + "_tokenizer"
    if fam == "emu3":  # ids below TEXT_VOCAB: 370 ranks, 219 specials after them
        enc = tiny_tokenizers.emu3_files(directory, vocab_size=370)
        encode = lambda text: tiny_tokenizers.emu3_encode(enc, text)  # noqa: E731
    else:
        make = {"chameleon": tiny_tokenizers.chameleon_tokenizer, "janus": tiny_tokenizers.janus_tokenizer}[fam]
        os.makedirs(directory, exist_ok=True)
        make(vocab_size=585).save(directory + "/tokenizer.json")
        tok = Tokenizer.from_file(directory + "/tokenizer.json")
        encode = lambda text: tok.encode(text, add_special_tokens=False).ids  # noqa: E731
    template, unconditional = TEMPLATES[fam]
    pairs = []
    for caption in CAPTIONS:
        cond = encode(template.replace("{prompt}", caption))
        assert max(cond) < TEXT_VOCAB, (fam, cond)
        if unconditional is None:  # Janus-Pro: everything between the first and the last becomes a pad
            null = cond[:1] + [tok.token_to_id("<｜▁pad▁｜>")] * (len(cond) - 2) + cond[-1:]
        else:
            null = encode(unconditional)
        pairs.append((cond, null))
    return pairs


def vqgan_test(rng):
    from transformers import ChameleonVQVAEConfig, JanusVQVAEConfig
    from transformers.models.chameleon.modeling_chameleon import ChameleonVQVAE
    from transformers.models.janus.modeling_janus import JanusVQVAEDecoder
    torch.manual_seed(2)
    shape = dict(embed_dim=8, num_embeddings=CODES, latent_channels=32, base_channels=32, channel_multiplier=[1, 1],
                 num_res_blocks=1)
    vq = ChameleonVQVAE(ChameleonVQVAEConfig(resolution=8, attn_resolutions=[], **shape)).eval()
    decoder = JanusVQVAEDecoder(JanusVQVAEConfig(**shape)).eval()
    decoder.up[0].attn = torch.nn.ModuleList()  # taming's decoder with attn_resolutions []: mid attention only
    with torch.no_grad():
        for p in list(vq.parameters()) + list(decoder.parameters()):
            p.add_(0.05 * torch.randn_like(p))
    state = {"encoder." + k: v for k, v in vq.encoder.state_dict().items()}
    for k, v in decoder.state_dict().items():  # up.i of taming counts levels from the highest resolution
        if k.startswith("up."):
            level, rest = k[3:].split(".", 1)
            k = "up.%d.%s" % (len(decoder.up) - 1 - int(level), rest)
        state["decoder." + k] = v
    for name in ("quant_conv", "post_quant_conv", "quantize"):
        state.update({name + "." + k: v for k, v in getattr(vq, name).state_dict().items()})
    state["loss.discriminator.weight"] = torch.zeros(3)  # what Meta's file carries beside the VQ
    os.makedirs("chameleon_vq", exist_ok=True)
    torch.save({"state_dict": state, "global_step": 0}, "chameleon_vq/vqgan.ckpt")
    images = torch.from_numpy(rng.uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32))
    codes = torch.from_numpy(rng.integers(0, CODES, (2, 16)))
    with torch.no_grad():
        latent = vq.quantize.embedding(codes).view(2, 4, 4, 8).permute(0, 3, 1, 2)
        pixels = decoder(vq.post_quant_conv(latent))
        image_codes = vq.encode(images)[2].view(2, -1)
    out = {"vqgan_images": images, "vqgan_image_codes": image_codes, "vqgan_codes": codes, "vqgan_pixels": pixels}
    for name, value in out.items():
        np.save(os.path.join("chameleon_ref", name + ".npy"), value.numpy())


def movq_test(rng):
    from safetensors.torch import save_file
    from transformers import Emu3VQVAEConfig
    from transformers.models.emu3.modeling_emu3 import Emu3VQVAE
    torch.manual_seed(3)
    vq = Emu3VQVAE(Emu3VQVAEConfig(codebook_size=CODES, embed_dim=4, latent_channels=4, base_channels=32,
                                   channel_multiplier=[1, 2], num_res_blocks=1, attn_resolutions=[1],
                                   hidden_size=64, num_attention_heads=1, temporal_downsample_factor=4)).eval()
    with torch.no_grad():
        for name, p in vq.named_parameters():
            p.copy_((1 + 0.3 * torch.randn_like(p)) if "norm" in name and name.endswith("weight") else 0.3 * torch.randn_like(p))
        for name, b in vq.named_buffers():  # BatchNorm3d's running statistics, away from 0 and 1
            if name.endswith("running_mean"):
                b.copy_(0.2 * torch.randn_like(b))
            elif name.endswith("running_var"):
                b.copy_(0.5 + torch.rand_like(b))
    codes = torch.from_numpy(rng.integers(0, CODES, (2, GRID, GRID)))
    with torch.no_grad():  # in float64: float32's own rounding is about 1e-4 at these weights' scale
        pixels = vq.double().decode(codes)
        vq.float()
    os.makedirs("emu3_ref", exist_ok=True)
    np.save("emu3_ref/movq_codes.npy", codes.reshape(2, -1).numpy())
    np.save("emu3_ref/movq_pixels.npy", pixels.numpy())
    # As inside transformers' Emu3-Gen-hf checkpoint: its own names under vqmodel., the language model beside.
    whole = {"vqmodel." + name: t.contiguous() for name, t in vq.state_dict().items()}
    whole["text_model.lm_head.weight"] = torch.zeros(3, 2)
    os.makedirs("emu3_vq_hf", exist_ok=True)
    save_file(whole, "emu3_vq_hf/model.safetensors")
    release = {}  # transformers' names -> the release's
    for name, t in vq.state_dict().items():
        name = name.replace("decoder.middle_block.", "decoder.mid.").replace("decoder.up_block.up.", "decoder.up.")
        name = name.replace("mid.attn_norm.", "mid.attn_1.norm.")
        for hf, own in (("q_proj", "q"), ("k_proj", "k"), ("v_proj", "v"), ("out_proj", "proj_out")):
            if "." + hf + "." in name:
                name = name.replace("." + hf + ".", "." + own + ".")
                if name.endswith("weight"):
                    t = t[:, :, None, None]
        if ".attn_norms." in name:  # up.N.attn_norms.M.* -> up.N.attn.M.norm.*
            head, tail = name.split(".attn_norms.")
            index, rest = tail.split(".", 1)
            name = f"{head}.attn.{index}.norm.{rest}"
        release[name] = t.contiguous()
    os.makedirs("emu3_vq", exist_ok=True)
    save_file(release, "emu3_vq/model.safetensors")


def save_draft(model, directory, noise=0.01):
    """SD's draft for the family's tests: the model with every weight perturbed, so that it agrees with the
    target on some tokens and not on others (a smaller released model plays this part for real ones)."""
    draft = copy.deepcopy(model)
    torch.manual_seed(4)
    with torch.no_grad():
        for p in draft.parameters():
            p.add_(noise * torch.randn_like(p))
    draft.save_pretrained(directory, max_shard_size="300KB")


def main(families):
    rng = np.random.default_rng(0)
    for fam in families:
        model, run = {"chameleon": chameleon, "janus": janus, "emu3": emu3}[fam]()
        model.save_pretrained(fam, max_shard_size="300KB")
        prompts, lens, codes = sequences(rng)
        out = {"prompts": prompts, "lens": lens, "codes": codes}
        with torch.no_grad():
            for r in range(2):
                h, logits = run(torch.from_numpy(prompts[r:r + 1, :lens[r]]), torch.from_numpy(codes[r:r + 1]))
                at = predicting(lens[r], N, EOL.get(fam))
                out["hidden_%d" % r] = h[0, at].numpy()
                out["logits_%d" % r] = logits[0, at].float().numpy()
            if fam in CFG:
                greedy = []
                for r in range(2):
                    cond, null = cfg_prompts(fam, prompts[r, :lens[r]], rng)
                    out["cond_%d" % r], out["null_%d" % r] = np.array(cond), np.array(null)
                    greedy.append(greedy_cfg(run, cond, null, CFG[fam]).numpy())
                out["greedy_cfg"] = np.stack(greedy)
                out["zipar_greedy"] = np.stack([zipar_greedy_cfg(fam, model, out["cond_%d" % r].tolist(),
                                                                 out["null_%d" % r].tolist(), CFG[fam], 2).numpy()
                                                for r in range(2)])
                greedy = []
                for r, (cond, null) in enumerate(caption_prompts(fam)):
                    out["caption_cond_%d" % r], out["caption_null_%d" % r] = np.array(cond), np.array(null)
                    greedy.append(greedy_cfg(run, cond, null, CFG[fam]).numpy())
                out["caption_greedy"] = np.stack(greedy)
            if fam == "janus":  # its VQ (LlamaGen's VQ-16 under taming's names) decodes codes to pixels
                out["vq_codes"] = rng.integers(0, CODES, (2, GRID * GRID))
                out["vq_pixels"] = model.model.vqmodel.decode(torch.from_numpy(out["vq_codes"])).numpy()
        os.makedirs(fam + "_ref", exist_ok=True)
        for name, value in out.items():
            np.save(os.path.join(fam + "_ref", name + ".npy"), value)
        save_draft(model, fam + "_draft")
        if fam == "chameleon":
            vqgan_test(rng)
        if fam == "emu3":
            movq_test(rng)
        print(fam, "ok")


if __name__ == "__main__":
    main(sys.argv[1:] or ["chameleon", "janus", "emu3"])
