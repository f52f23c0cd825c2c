// Tensors and their file formats: TensorProto, .npy, external data.
#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

using singa::Tensor;

namespace {
std::string tmpdir() {
  char tmpl[] = "/tmp/singa_tensor_XXXXXX";
  return mkdtemp(tmpl);
}
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const singa::Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(Tensor, ProtoRoundTrip) {
  auto t = Tensor::from_vector<int32_t>({2, 3}, SINGA_ONNX_INT32, {1, -2, 3, -4, 5, -6});
  auto back = singa::onnx::from_proto(singa::onnx::to_proto(t, "t"));
  EXPECT_EQ(back.shape(), t.shape());
  EXPECT_EQ(back.dtype(), SINGA_ONNX_INT32);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back.data<int32_t>()[i], t.data<int32_t>()[i]);
}

TEST(Tensor, TypedFieldsAreRead) {
  ::onnx::TensorProto p;
  p.set_data_type(SINGA_ONNX_FLOAT);
  p.add_dims(3);
  for (float v : {1.5f, 2.5f, -3.f}) p.add_float_data(v);
  auto t = singa::onnx::from_proto(p);
  EXPECT_FLOAT_EQ(t.data<float>()[2], -3.f);
  p.add_float_data(9.f);
  EXPECT_NE(error_of([&] { singa::onnx::from_proto(p); }).find("holds 4 values but shape [3] needs 3"), std::string::npos);
}

TEST(Tensor, NpyRoundTrip) {
  std::string dir = tmpdir();
  auto t = Tensor::from_vector<double>({2, 2}, SINGA_ONNX_DOUBLE, {1, 2, 3, 4});
  singa::onnx::save_tensor_npy(t, dir + "/a.npy");
  auto back = singa::onnx::load_tensor_file(dir + "/a.npy");
  EXPECT_EQ(back.shape(), t.shape());
  EXPECT_DOUBLE_EQ(back.data<double>()[3], 4.0);
  std::ofstream(dir + "/bad.npy") << "garbage";
  EXPECT_NE(error_of([&] { singa::onnx::load_tensor_file(dir + "/bad.npy"); }).find("not a .npy"), std::string::npos);
  EXPECT_NE(error_of([&] { singa::onnx::load_tensor_file(dir + "/missing.pb"); }).find("cannot open"), std::string::npos);
}

TEST(Tensor, ExternalDataStaysInsideTheModelFolder) {
  std::string dir = tmpdir();
  std::string outside = tmpdir();
  float vals[2] = {7.f, 8.f};
  std::ofstream(dir + "/w.bin", std::ios::binary).write(reinterpret_cast<const char*>(vals), 8);
  std::ofstream(outside + "/secret.bin", std::ios::binary).write(reinterpret_cast<const char*>(vals), 8);
  ::onnx::TensorProto p;
  p.set_name("w");
  p.set_data_type(SINGA_ONNX_FLOAT);
  p.add_dims(2);
  p.set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* loc = p.add_external_data();
  loc->set_key("location");
  loc->set_value("w.bin");
  EXPECT_FLOAT_EQ(singa::onnx::from_proto(p, dir).data<float>()[1], 8.f);
  loc->set_value("../" + outside.substr(5) + "/secret.bin");
  EXPECT_NE(error_of([&] { singa::onnx::from_proto(p, dir); }).find("escapes"), std::string::npos);
  loc->set_value(outside + "/secret.bin");
  EXPECT_NE(error_of([&] { singa::onnx::from_proto(p, dir); }).find("absolute"), std::string::npos);
  ASSERT_EQ(symlink((outside + "/secret.bin").c_str(), (dir + "/link.bin").c_str()), 0);
  loc->set_value("link.bin");
  EXPECT_NE(error_of([&] { singa::onnx::from_proto(p, dir); }).find("outside"), std::string::npos);
}

TEST(Tensor, AbsurdShapesAreRefusedBeforeAllocation) {
  ::onnx::TensorProto p;
  p.set_data_type(SINGA_ONNX_FLOAT);
  p.add_dims(1000000);
  p.add_dims(1000000);  // 10^12 elements, no data: refused before allocating 4 TB
  EXPECT_NE(error_of([&] { singa::onnx::from_proto(p); }).find("holds 0 values"), std::string::npos);
  p.set_raw_data("abcd");
  EXPECT_NE(error_of([&] { singa::onnx::from_proto(p); }).find("raw_data holds 4 bytes"), std::string::npos);
  p.add_dims(1000000);
  EXPECT_NE(error_of([&] { singa::onnx::from_proto(p); }).find("absurdly large"), std::string::npos);
  EXPECT_THROW(Tensor({-1, 2}, SINGA_ONNX_FLOAT), singa::Error);
}
