"""Byte-level BPE tokenizers trained here, in the shapes of the LLM families' own, and the ids their reference
libraries give for awkward strings: the reference for tests/test_bpe_tokenizer.cpp (run there at test time in a
fresh directory; nothing is downloaded).

Writes, in the working directory:
  chameleon/tokenizer.json  Chameleon's shape (Lumina-mGPT, Anole): splits isolating sentinels, image-token names,
                            tabs/newlines/runs of spaces, single digits and punctuation, then GPT-2's byte-level
                            expression; special tokens <s>, </s>, <racm3:break>, <eoss>, <reserved08706>.
  janus/tokenizer.json      Janus-Pro's (DeepSeek-LLM's) shape: line breaks, letter runs with one leading space,
                            punctuation runs, trailing spaces ("\\s+$": Oniguruma's $ ends every line), CJK runs,
                            digit runs, then byte-level without its expression; NFKC; special tokens with lstrip
                            and rstrip; ignore_merges.
  llama3/tokenizer.json     one GPT-4-style split (scoped case-insensitive contractions, digits in threes), NFC,
                            a literal Replace and merges written as pairs; plus every split behaviour and invert.
  gpt2/tokenizer.json       GPT-2's: ByteLevel with its expression and a prefix space.
  emu3/emu3.tiktoken, emu3/emu3_vision_tokens.txt
                            Emu3's files: ranks (base64 bytes, rank) of a tokenizer trained here, and its vision
                            tokens' names; the reference is tiktoken with Emu3's expression, NFC and specials.
  expected.json             {name: [[text, ids], ...]}: Hugging Face tokenizers' encode(text,
                            add_special_tokens=False), or for emu3 tiktoken's encode(NFC(text), allowed_special="all").
"""
import base64
import json
import os
import unicodedata

import tiktoken
from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers

CORPUS = [
    "A photo of a cat sitting on a red sofa, 4k, highly detailed.",
    "Generate an image of 768x768 according to the following prompt:\nA lighthouse at dusk.",
    "Ünïcödé café naïve résumé — déjà vu. Straße, Œuvre, ﬁne ligatures ＦＵＬＬ width.",
    "中文字符测试，图像生成。日本語のテキストです。한국어 문장입니다.",
    "Ελληνικά κείμενα και русский текст и العربية والعبرية עברית",
    "emoji 👍🏽 👨‍👩‍👧 🎨🖼️ and symbols ©®™ ∑∫√ ±×÷ → ← ↑",
    "digits 0123456789 1234567 3.14159 2,048 1e-4 90*90 ١٢٣ ⅷ",
    "don't it's we'll I'M THEY'RE you've she'd 'quoted' \"double\"",
    "tabs\tand\t\tnewlines\n\n\nand   runs    of     spaces  \r\n windows",
    "code: def f(x): return x ** 2  # comment {braces} [brackets] <angle>",
]
STRINGS = CORPUS + [
    "", " ", "  ", "\n", "\t", "a", " leading space", "trailing space ", "   three leading",
    "double  space", "line one\nline two\n\nline four\n", "end with spaces   ", "end with newline\n  ",
    "e\u0301 composed later", "\u00a0no-break\u00a0spaces\u3000ideographic", "vertical\x0btab and\x0cform feed",
    "next\u0085line", "zero\u200bwidth\u200djoiners", "MiXeD CaSe 'S 'T 'RE 'LL", "numbers 1234567890123 and 12",
    "<s>special at start", "middle </s> special", "lstrip <|User|>  rstrip <|Assistant|>   x",
    "<racm3:break><eoss><reserved08706>", "<sentinel:12> IMGIMGABZ IMGIMGAAAAZ", "<|extra_203|>prompt<|image start|>",
    "90*90<|image token|>", "unknown <not_special> tokens <|", "🙂" * 5, "ab" * 40, " x" * 30,
    "Ω≈ç√∫˜µ≤≥÷ åß∂ƒ©˙∆˚¬…æ", "ﬁ ﬂ ﬀ ﬃ Ⅻ ① ㎏", "Straße STRASSE", "\r\r\n\n\r", "a\u0308\u0301 stacked marks",
]
SPECIALS = {
    "chameleon": ["<s>", "</s>", "<racm3:break>", "<eoss>", "<reserved08706>", "<reserved08802>"],
    "janus": ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>", "<begin_of_image>"],
    "llama3": ["<|begin_of_text|>", "<|end_of_text|>"],
    "gpt2": ["<|endoftext|>"],
}
CHAMELEON_SPLITS = [r"<sentinel:[0-9]+>", r"(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", r"([\t\n]|    |  )", r"\p{N}",
                    r"[\p{P}!-/:-@\[-`{-~]"]
JANUS_SPLITS = [r"[\r\n]", r"\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯＡ-Ｚａ-ｚ]+",
                r"\s?[!-/:-~！-／：-～‘-‟　-。]+", r"\s+$", r"[一-龥ࠀ-一가-퟿]+", r"\p{N}+"]
GPT4_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
EMU3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")


def train(model, pre, normalizer=None, specials=(), vocab_size=700):
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre
    if normalizer is not None:
        tok.normalizer = normalizer
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(specials),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS * 3, trainer)
    return tok


def split(pattern, behavior="isolated", invert=False):
    return pre_tokenizers.Split(Regex(pattern), behavior=behavior, invert=invert)


def chameleon_tokenizer(vocab_size=700):
    return train(models.BPE(), pre_tokenizers.Sequence(
        [split(p) for p in CHAMELEON_SPLITS] + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]),
        specials=SPECIALS["chameleon"], vocab_size=vocab_size)


def janus_tokenizer(vocab_size=700):
    tok = train(models.BPE(ignore_merges=True), pre_tokenizers.Sequence(
        [split(p) for p in JANUS_SPLITS] + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        normalizer=normalizers.NFKC(), specials=SPECIALS["janus"], vocab_size=vocab_size)
    # Special tokens that take the white space beside them (Janus-Pro's chat tags), added after training.
    tok.add_special_tokens([AddedToken("<|User|>", lstrip=True, special=True),
                            AddedToken("<|Assistant|>", rstrip=True, special=True)])
    return tok


def emu3_files(directory, vocab_size=900, visual_tokens=8):
    """Emu3's tokenizer files in `directory`: tiktoken ranks from a byte-level tokenizer trained with Emu3's
    expression (its tokens in id order are ranks: every merge's parts come before it), specials from the rank
    count on. Returns the reference: tiktoken's Encoding of them (encode NFC text with allowed_special="all")."""
    emu = train(models.BPE(ignore_merges=True), pre_tokenizers.Sequence(
        [split(EMU3_PATTERN), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        vocab_size=vocab_size)
    byte_of = {c: b for b, c in enumerate_alphabet().items()}
    vocab = sorted(emu.get_vocab().items(), key=lambda kv: kv[1])
    ranks = {bytes(byte_of[c] for c in spelled): rank for rank, (spelled, _) in enumerate(vocab)}
    vision = ["<|image token|>", "<|image start|>", "<|image end|>"] + [f"<|visual token {i:06d}|>"
                                                                        for i in range(visual_tokens)]
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [f"<|extra_{i}|>" for i in range(205)] + vision
    os.makedirs(directory, exist_ok=True)
    with open(f"{directory}/emu3.tiktoken", "w") as f:
        for b, r in ranks.items():
            f.write(f"{base64.b64encode(b).decode()} {r}\n")
    with open(f"{directory}/emu3_vision_tokens.txt", "w") as f:
        f.write("\n".join(vision) + "\n")
    return tiktoken.Encoding("emu3", pat_str=EMU3_PATTERN, mergeable_ranks=ranks,
                             special_tokens={t: len(ranks) + i for i, t in enumerate(specials)})


def emu3_encode(enc, text):
    """As Emu3's own tokenizer encodes: NFC, then tiktoken with every special token allowed."""
    return enc.encode(unicodedata.normalize("NFC", text), allowed_special="all")


def main():
    expected = {}
    toks = {
        "chameleon": chameleon_tokenizer(),
        "janus": janus_tokenizer(),
        "llama3": train(models.BPE(ignore_merges=True), pre_tokenizers.Sequence([
            split(r"\d+", "contiguous"), split(r"[,;]", "merged_with_previous"), split(r"[(\[]", "merged_with_next"),
            split(r"\s*#", "removed"), split(r"[^\s]+", "isolated", invert=True), split(GPT4_PATTERN),
            pre_tokenizers.Digits(individual_digits=False), pre_tokenizers.Punctuation(),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
            normalizer=normalizers.Sequence([normalizers.NFC(), normalizers.Replace("``", '"')]),
            specials=SPECIALS["llama3"]),
        "gpt2": train(models.BPE(), pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True),
                      normalizer=normalizers.NFD(), specials=SPECIALS["gpt2"]),
    }
    for name, tok in toks.items():
        os.makedirs(name, exist_ok=True)
        tok.save(f"{name}/tokenizer.json")
        expected[name] = [[s, tok.encode(s, add_special_tokens=False).ids] for s in STRINGS]
    # The llama3 file writes merges as pairs; the others as "left right" strings (both forms exist in the wild).
    for name in ("chameleon", "janus", "gpt2"):
        path = f"{name}/tokenizer.json"
        j = json.load(open(path, encoding="utf-8"))
        j["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in j["model"]["merges"]]
        json.dump(j, open(path, "w", encoding="utf-8"), ensure_ascii=False)
    enc = emu3_files("emu3")
    expected["emu3"] = [[s, emu3_encode(enc, s)] for s in STRINGS]
    json.dump(expected, open("expected.json", "w", encoding="utf-8"), ensure_ascii=False)


def enumerate_alphabet():
    """GPT-2's byte -> character table (what ByteLevel spells bytes with)."""
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    table, extra = {}, 256
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(extra)
            extra += 1
    return table


if __name__ == "__main__":
    main()
