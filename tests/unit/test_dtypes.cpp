// ABI 1.2's element types: float8, float4, float8e8m0 and the packed 4-bit
// and 2-bit integers (sdk/include/singa/kernel.hpp, docs/abi.md), checked
// against the values in ONNX's docs (docs/Float8.md, the Cast operator's
// tables, the FLOAT4E2M1 and FLOAT8E8M0 descriptions) and the TensorProto
// rules for packed data.
#include <singa/kernel.hpp>
#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace mf = singa::sdk::minifloat;
using singa::Tensor;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const int32_t kFloat8[] = {SINGA_ONNX_FLOAT8E4M3FN, SINGA_ONNX_FLOAT8E4M3FNUZ, SINGA_ONNX_FLOAT8E5M2,
                           SINGA_ONNX_FLOAT8E5M2FNUZ};
}  // namespace

TEST(Dtypes, Names) {
  EXPECT_STREQ(singa::sdk::dtype_name(SINGA_ONNX_FLOAT8E4M3FN), "float8e4m3fn");
  EXPECT_STREQ(singa::sdk::dtype_name(SINGA_ONNX_INT4), "int4");
  EXPECT_STREQ(singa::sdk::dtype_name(SINGA_ONNX_INT2), "int2");
  EXPECT_STREQ(singa::sdk::dtype_name(27), "unknown");
}

TEST(Dtypes, DLPackMappingIsOneToOne) {
  for (int32_t t = 1; t <= singa::sdk::kNewestDtype; ++t) {
    DLDataType dl = singa::sdk::dl_dtype(t);
    EXPECT_EQ(dl.lanes, 1) << t;
    EXPECT_EQ(singa::sdk::onnx_dtype(dl), t) << singa::sdk::dtype_name(t);
  }
  EXPECT_EQ(singa::sdk::dl_dtype(SINGA_ONNX_INT4).bits, 4);
  EXPECT_EQ(singa::sdk::dl_dtype(SINGA_ONNX_UINT2).bits, 2);
  EXPECT_EQ(singa::sdk::dl_dtype(SINGA_ONNX_FLOAT8E5M2).code, 12);  // DLPack 1.1's kDLFloat8_e5m2
}

TEST(Dtypes, ByteCounts) {
  EXPECT_EQ(singa::sdk::dtype_nbytes(SINGA_ONNX_INT4, 5), 3u);
  EXPECT_EQ(singa::sdk::dtype_nbytes(SINGA_ONNX_FLOAT4E2M1, 4), 2u);
  EXPECT_EQ(singa::sdk::dtype_nbytes(SINGA_ONNX_INT2, 5), 2u);
  EXPECT_EQ(singa::sdk::dtype_nbytes(SINGA_ONNX_UINT2, 8), 2u);
  EXPECT_EQ(singa::sdk::dtype_nbytes(SINGA_ONNX_FLOAT8E8M0, 5), 5u);
  EXPECT_EQ(singa::sdk::dtype_nbytes(SINGA_ONNX_FLOAT, 5), 20u);
  EXPECT_EQ(singa::dtype_size(SINGA_ONNX_INT4), 0u);  // elements share bytes
  EXPECT_EQ(singa::dtype_size(SINGA_ONNX_FLOAT8E4M3FN), 1u);
  Tensor t({3, 3}, SINGA_ONNX_INT4);
  EXPECT_EQ(t.nbytes(), 5u);
  Tensor u({7}, SINGA_ONNX_UINT2);
  EXPECT_EQ(u.nbytes(), 2u);
}

// The largest finite values, smallest subnormals and 1.0 of each float8
// (docs/Float8.md).
TEST(Dtypes, Float8Landmarks) {
  struct Case {
    int32_t t;
    uint8_t one, max_code, min_sub_code;
    double max, min_sub;
  };
  const Case cases[] = {
      {SINGA_ONNX_FLOAT8E4M3FN, 0x38, 0x7e, 0x01, 448.0, std::ldexp(1.0, -9)},
      {SINGA_ONNX_FLOAT8E4M3FNUZ, 0x40, 0x7f, 0x01, 240.0, std::ldexp(1.0, -10)},
      {SINGA_ONNX_FLOAT8E5M2, 0x3c, 0x7b, 0x01, 57344.0, std::ldexp(1.0, -16)},
      {SINGA_ONNX_FLOAT8E5M2FNUZ, 0x40, 0x7f, 0x01, 57344.0, std::ldexp(1.0, -17)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(singa::sdk::dtype_name(c.t));
    EXPECT_EQ(mf::to_float8(1.0, c.t), c.one);
    EXPECT_EQ(mf::to_float8(-1.0, c.t), c.one | 0x80);
    EXPECT_EQ(mf::to_float8(c.max, c.t), c.max_code);
    EXPECT_EQ(mf::to_float8(c.min_sub, c.t), c.min_sub_code);
    EXPECT_EQ(mf::from_float8(c.max_code, c.t), c.max);
    EXPECT_EQ(mf::from_float8(c.min_sub_code, c.t), c.min_sub);
    EXPECT_EQ(mf::from_float8(c.one, c.t), 1.0f);
    // Half the smallest subnormal is a tie with 0: to even (0).
    EXPECT_EQ(mf::to_float8(c.min_sub / 2, c.t), 0);
    EXPECT_EQ(mf::to_float8(c.min_sub * 0.75, c.t), c.min_sub_code);
  }
}

// Cast's saturate table (Cast-19): x, then the result for E4M3FN, E4M3FNUZ,
// E5M2, E5M2FNUZ with saturate on and off.
TEST(Dtypes, Float8SpecialValues) {
  // 0 and -0: the FNUZ types have no negative zero.
  EXPECT_EQ(mf::to_float8(-0.0, SINGA_ONNX_FLOAT8E4M3FN), 0x80);
  EXPECT_EQ(mf::to_float8(-0.0, SINGA_ONNX_FLOAT8E4M3FNUZ), 0x00);
  EXPECT_EQ(mf::to_float8(-0.0, SINGA_ONNX_FLOAT8E5M2), 0x80);
  EXPECT_EQ(mf::to_float8(-0.0, SINGA_ONNX_FLOAT8E5M2FNUZ), 0x00);
  EXPECT_EQ(mf::to_float8(-1e-9, SINGA_ONNX_FLOAT8E4M3FNUZ), 0x00);  // rounds to -0, which is 0
  for (int32_t t : kFloat8) {
    SCOPED_TRACE(singa::sdk::dtype_name(t));
    EXPECT_TRUE(std::isnan(mf::from_float8(mf::to_float8(kNaN, t, true), t)));
    EXPECT_TRUE(std::isnan(mf::from_float8(mf::to_float8(kNaN, t, false), t)));
  }
  // Saturating: +-inf and out-of-range values give +-max.
  for (bool sat : {true, false}) {
    SCOPED_TRACE(sat ? "saturate" : "no saturate");
    const double big = 1e6;
    EXPECT_EQ(mf::to_float8(big, SINGA_ONNX_FLOAT8E4M3FN, sat), sat ? 0x7e : 0x7f);
    EXPECT_EQ(mf::to_float8(-big, SINGA_ONNX_FLOAT8E4M3FN, sat), sat ? 0xfe : 0xff);
    EXPECT_EQ(mf::to_float8(kInf, SINGA_ONNX_FLOAT8E4M3FN, sat), sat ? 0x7e : 0x7f);
    EXPECT_EQ(mf::to_float8(big, SINGA_ONNX_FLOAT8E4M3FNUZ, sat), sat ? 0x7f : 0x80);
    EXPECT_EQ(mf::to_float8(-kInf, SINGA_ONNX_FLOAT8E4M3FNUZ, sat), sat ? 0xff : 0x80);
    EXPECT_EQ(mf::to_float8(big, SINGA_ONNX_FLOAT8E5M2, sat), sat ? 0x7b : 0x7c);
    EXPECT_EQ(mf::to_float8(-kInf, SINGA_ONNX_FLOAT8E5M2, sat), sat ? 0xfb : 0xfc);
    EXPECT_EQ(mf::to_float8(big, SINGA_ONNX_FLOAT8E5M2FNUZ, sat), sat ? 0x7f : 0x80);
  }
  EXPECT_EQ(mf::from_float8(0x7c, SINGA_ONNX_FLOAT8E5M2), std::numeric_limits<float>::infinity());
  EXPECT_EQ(mf::from_float8(0xfc, SINGA_ONNX_FLOAT8E5M2), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(mf::from_float8(0x7d, SINGA_ONNX_FLOAT8E5M2)));
  EXPECT_TRUE(std::isnan(mf::from_float8(0xff, SINGA_ONNX_FLOAT8E4M3FN)));
  EXPECT_TRUE(std::isnan(mf::from_float8(0x80, SINGA_ONNX_FLOAT8E4M3FNUZ)));
  EXPECT_EQ(mf::from_float8(0x80, SINGA_ONNX_FLOAT8E4M3FN), 0.0f);
  EXPECT_TRUE(std::signbit(mf::from_float8(0x80, SINGA_ONNX_FLOAT8E4M3FN)));
  // Between the largest value and the next step up (464 for E4M3FN) values
  // round down to the largest; past it they overflow.
  EXPECT_EQ(mf::to_float8(464.0, SINGA_ONNX_FLOAT8E4M3FN, false), 0x7e);
  EXPECT_EQ(mf::to_float8(465.0, SINGA_ONNX_FLOAT8E4M3FN, false), 0x7f);
  EXPECT_EQ(mf::to_float8(61439.0, SINGA_ONNX_FLOAT8E5M2, false), 0x7b);
  EXPECT_EQ(mf::to_float8(61440.0, SINGA_ONNX_FLOAT8E5M2, false), 0x7c);  // the tie goes to even: infinity
}

TEST(Dtypes, Float8RoundsToNearestEven) {
  // E4M3FN around 1: steps of 1/8.
  EXPECT_EQ(mf::to_float8(1.0625, SINGA_ONNX_FLOAT8E4M3FN), 0x38);  // tie: 1.0 (even)
  EXPECT_EQ(mf::to_float8(1.1875, SINGA_ONNX_FLOAT8E4M3FN), 0x3a);  // tie: 1.25 (even)
  EXPECT_EQ(mf::to_float8(1.07, SINGA_ONNX_FLOAT8E4M3FN), 0x39);
  // E5M2 around 1: steps of 1/4.
  EXPECT_EQ(mf::to_float8(1.125, SINGA_ONNX_FLOAT8E5M2), 0x3c);
  EXPECT_EQ(mf::to_float8(1.375, SINGA_ONNX_FLOAT8E5M2), 0x3e);
  // A carry out of the mantissa moves to the next binade: 1.9375 -> 2.
  EXPECT_EQ(mf::to_float8(1.9375, SINGA_ONNX_FLOAT8E4M3FN), 0x40);
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(mf::to_float8(std::ldexp(15.5, -10), SINGA_ONNX_FLOAT8E4M3FN), 0x08);
}

// Every code that is not NaN decodes to a value that encodes back to it.
TEST(Dtypes, Float8RoundTrips) {
  for (int32_t t : kFloat8) {
    for (int c = 0; c < 256; ++c) {
      float v = mf::from_float8(uint8_t(c), t);
      if (std::isnan(v)) continue;
      EXPECT_EQ(mf::to_float8(double(v), t, false), c) << singa::sdk::dtype_name(t) << " code " << c;
    }
  }
  int nans = 0;
  for (int c = 0; c < 256; ++c) nans += std::isnan(mf::from_float8(uint8_t(c), SINGA_ONNX_FLOAT8E5M2));
  EXPECT_EQ(nans, 6);  // S.11111.{01,10,11}
}

// FLOAT4E2M1: S.EE.M, the values 0, 0.5, 1, 1.5, 2, 3, 4, 6, no NaN or inf.
TEST(Dtypes, Float4) {
  const float values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(mf::from_float4e2m1(uint8_t(c)), values[c]);
    EXPECT_EQ(mf::from_float4e2m1(uint8_t(c | 8)), -values[c]);
    EXPECT_EQ(mf::to_float4e2m1(values[c]), c);
    EXPECT_EQ(mf::to_float4e2m1(-double(values[c])), c | 8);
  }
  EXPECT_EQ(mf::to_float4e2m1(0.25), 0);    // tie between 0 and 0.5: even
  EXPECT_EQ(mf::to_float4e2m1(0.75), 2);    // tie between 0.5 and 1: even (1)
  EXPECT_EQ(mf::to_float4e2m1(2.5), 4);     // tie between 2 and 3: even (2)
  EXPECT_EQ(mf::to_float4e2m1(5.0), 6);     // tie between 4 and 6: even (4)
  EXPECT_EQ(mf::to_float4e2m1(-3.5), 0xe);  // tie between 3 and 4: even (4)
  EXPECT_EQ(mf::to_float4e2m1(7.0), 7);     // saturates
  EXPECT_EQ(mf::to_float4e2m1(kInf), 7);
  EXPECT_EQ(mf::to_float4e2m1(-kInf), 0xf);
  EXPECT_EQ(mf::to_float4e2m1(kNaN), 0x8);
}

// FLOAT8E8M0: 2^(code - 127), 0xff NaN; Cast-25's round modes.
TEST(Dtypes, Float8E8M0) {
  using R = mf::E8M0Round;
  EXPECT_EQ(mf::to_e8m0(1.0), 127);
  EXPECT_EQ(mf::to_e8m0(0.125), 124);
  EXPECT_EQ(mf::to_e8m0(0.124), 124);  // up
  EXPECT_EQ(mf::to_e8m0(3.0, true, R::kUp), 129);
  EXPECT_EQ(mf::to_e8m0(3.0, true, R::kDown), 128);
  EXPECT_EQ(mf::to_e8m0(3.0, true, R::kNearest), 129);  // tie: up
  EXPECT_EQ(mf::to_e8m0(2.9, true, R::kNearest), 128);
  EXPECT_EQ(mf::to_e8m0(0.0), 0);
  EXPECT_EQ(mf::to_e8m0(kNaN), 0xff);
  EXPECT_EQ(mf::to_e8m0(kInf, true), 0xfe);
  EXPECT_EQ(mf::to_e8m0(kInf, false), 0xff);
  EXPECT_EQ(mf::to_e8m0(std::ldexp(1.5, 127), true), 0xfe);
  EXPECT_EQ(mf::to_e8m0(std::ldexp(1.5, 127), false), 0xff);
  EXPECT_EQ(mf::from_float8(127, SINGA_ONNX_FLOAT8E8M0), 1.0f);
  EXPECT_EQ(mf::from_float8(0, SINGA_ONNX_FLOAT8E8M0), std::ldexp(1.0f, -127));
  EXPECT_EQ(mf::from_float8(0xfe, SINGA_ONNX_FLOAT8E8M0), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(mf::from_float8(0xff, SINGA_ONNX_FLOAT8E8M0)));
  for (int c = 0; c < 255; ++c)
    EXPECT_EQ(mf::to_e8m0(mf::from_float8(uint8_t(c), SINGA_ONNX_FLOAT8E8M0)), c);
}

// Packing: the first element in the lowest bits.
TEST(Dtypes, PackedElements) {
  uint8_t buf[2] = {0, 0};
  singa::sdk::packed_set(buf, 0, 4, 0x7);
  singa::sdk::packed_set(buf, 1, 4, 0x8);
  singa::sdk::packed_set(buf, 2, 4, 0xf);
  EXPECT_EQ(buf[0], 0x87);
  EXPECT_EQ(buf[1], 0x0f);
  EXPECT_EQ(singa::sdk::packed_int(singa::sdk::packed_get(buf, 1, 4), 4, true), -8);
  EXPECT_EQ(singa::sdk::packed_int(singa::sdk::packed_get(buf, 1, 4), 4, false), 8);
  EXPECT_EQ(singa::sdk::packed_int(singa::sdk::packed_get(buf, 2, 4), 4, true), -1);
  // 0x39 = 00 11 10 01: int2 elements 1, -2, -1, 0 (ONNX's Cast INT2 test data).
  const uint8_t b = 0x39;
  const int expect[4] = {1, -2, -1, 0};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(singa::sdk::packed_int(singa::sdk::packed_get(&b, i, 2), 2, true), expect[i]);
}

// TensorProto: packed types in raw_data and in int32_data (one byte per
// int32), float8 codes one per int32.
TEST(Dtypes, TensorProtoReadsAndWritesPackedData) {
  ::onnx::TensorProto p;
  p.set_data_type(SINGA_ONNX_INT4);
  p.add_dims(3);
  p.add_int32_data(0x87);
  p.add_int32_data(0x0f);
  Tensor t = singa::onnx::from_proto(p);
  EXPECT_EQ(t.dtype(), SINGA_ONNX_INT4);
  EXPECT_EQ(t.nbytes(), 2u);
  EXPECT_EQ(t.data<uint8_t>()[0], 0x87);
  EXPECT_EQ(t.data<uint8_t>()[1] & 0x0f, 0x0f);
  ::onnx::TensorProto back = singa::onnx::to_proto(t, "t");
  EXPECT_EQ(back.raw_data().size(), 2u);
  EXPECT_EQ(uint8_t(back.raw_data()[0]), 0x87);
  Tensor again = singa::onnx::from_proto(back);
  EXPECT_EQ(again.shape(), t.shape());

  ::onnx::TensorProto wrong;
  wrong.set_data_type(SINGA_ONNX_UINT2);
  wrong.add_dims(5);
  wrong.set_raw_data(std::string(5, '\0'));  // 5 elements take 2 bytes
  EXPECT_THROW(singa::onnx::from_proto(wrong), singa::Error);

  ::onnx::TensorProto f8;
  f8.set_data_type(SINGA_ONNX_FLOAT8E5M2);
  f8.add_dims(2);
  f8.add_int32_data(0x3c);
  f8.add_int32_data(0x7c);
  Tensor g = singa::onnx::from_proto(f8);
  EXPECT_EQ(mf::from_float8(g.data<uint8_t>()[0], SINGA_ONNX_FLOAT8E5M2), 1.0f);
  EXPECT_TRUE(std::isinf(mf::from_float8(g.data<uint8_t>()[1], SINGA_ONNX_FLOAT8E5M2)));
}
