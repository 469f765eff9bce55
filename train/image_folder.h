// Training images from a folder in ImageNet's layout (torchvision's ImageFolder, which LlamaGen's trainers
// read): one sub-folder per class, classes numbered in the sorted order of their names, each image a file in
// its class's folder. vispec reads PNG files (gray or colour, any bit depth, palettes; alpha is dropped as PIL's
// convert("RGB") drops it) and JPEG files (.jpg, .jpeg, ImageNet's .JPEG; CMYK ones converted as PIL converts
// them); any other file in a class folder is refused with its name, so that no image is silently left out.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vispec {

struct ImageFolder {
  std::string root;
  std::vector<std::string> classes;  // sub-folder names, sorted: class i is classes[i]
  struct Image {
    std::string path;
    int64_t label;
  };
  std::vector<Image> images;  // by class, then by file name
};

// Scans `root`. Throws one line naming the folder or file for: no class folders, an empty class, a file that is
// not a PNG or JPEG, more classes than `max_classes` (the model's).
ImageFolder scan_image_folder(const std::string& root, int64_t max_classes);

// One image as a VQ of `channels` channels reads it at `size` x `size` px: [channels, size, size] float32 in
// [-1, 1], as LlamaGen's extraction gets it from Pillow and torchvision, bit for bit: center_crop_arr (halved with
// Pillow's box filter while the short side is at least 2 size, then Pillow's bicubic so that the short side is
// `size`, io/pil_resize.h; cut out at the centre), then ToTensor and Normalize(0.5, 0.5). Gray images are repeated
// over three channels, and a 1-channel VQ gets the mean of RGB.
torch::Tensor load_folder_image(const std::string& path, int64_t size, int64_t channels);

// Images `indices` of a folder, decoded on LibTorch's threads (--threads): [n, channels, size, size].
torch::Tensor load_folder_images(const ImageFolder& folder, const std::vector<size_t>& indices, int64_t size,
                                 int64_t channels);

// Which images are held out for evaluation: every tenth (index % 10 == 9), or none in a folder of fewer than ten.
bool held_out(size_t index, size_t count);
// The indices of a split of `count` images: the training ones (all but the held-out), or the test ones (the
// held-out; all of them where none is held out, so that the trainers evaluate on the training images).
std::vector<size_t> split_indices(size_t count, bool test);

}  // namespace vispec
