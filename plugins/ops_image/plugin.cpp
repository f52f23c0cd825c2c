// plugin.cpp - the ops_image pack: ImageDecoder on the CPU (JPEG, PNG, BMP,
// PNM, and TIFF, WebP, JPEG 2000 where their libraries were found).
#include "register.hpp"

SINGA_PLUGIN("ops_image", "0.1.0", "image ops: ImageDecoder (JPEG, PNG, BMP, PNM, TIFF, WebP, JPEG 2000) (CPU)") {
  singa::image::register_image_decoder(reg);
}
