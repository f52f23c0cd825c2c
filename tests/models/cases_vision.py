"""Image models of the ONNX model-zoo families, exported from PyTorch with seeded random weights.

Input sizes are the smallest each architecture accepts without changing its structure, so the
suite stays cheap on a 2-core CI machine; the stages, strides and op mix are the real ones.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

from export_helpers import calibrate_batchnorm, randomise_affine, scale_outputs, write_case

PRESERVE = torch.onnx.TrainingMode.PRESERVE


def _prepared(model, seed, calib_shape):
    """Random BatchNorm scales/shifts, then statistics of real activations (see export_helpers)."""
    randomise_affine(model, seed)
    calibrate_batchnorm(model, [torch.randn(*calib_shape) for _ in range(2)])
    return model


# ---------------------------------------------------------------------------------------------
# torchvision families


def case_mobilenet_v2(root):
    # ReLU6 exports as Clip with min/max inputs (opset 11); inverted residuals with depthwise
    # (group = channels) convolutions. 96x96 keeps every stride-2 stage above 1x1.
    torch.manual_seed(11)
    model = _prepared(torchvision.models.mobilenet_v2(weights=None), 11, (4, 3, 96, 96))
    x = torch.randn(1, 3, 96, 96)
    write_case(root, "mobilenet_v2_opset11", model, [[x]], 11, ["image"], ["logits"])


def case_squeezenet(root):
    torch.manual_seed(12)
    model = torchvision.models.squeezenet1_1(weights=None)
    # torchvision draws the last conv from N(0, 0.01), which leaves logits of ~1e-3 that atol
    # alone would accept; a He-scaled draw keeps them of order one.
    nn.init.kaiming_uniform_(model.classifier[1].weight, nonlinearity="relu")
    # 64x64: MaxPool with ceil_mode (output rounding up) still sees odd sizes (31 -> 15 -> 7 -> 3).
    x = torch.randn(2, 3, 64, 64)
    write_case(root, "squeezenet1_1_opset13", model, [[x]], 13, ["image"], ["logits"])


def case_shufflenet(root):
    # Channel shuffle is Reshape/Transpose/Reshape and the split branches are Split (split as an
    # input from opset 13); BatchNormalization nodes are kept.
    torch.manual_seed(13)
    model = _prepared(torchvision.models.shufflenet_v2_x0_5(weights=None), 13, (4, 3, 64, 64))
    x = torch.randn(1, 3, 64, 64)
    write_case(root, "shufflenet_v2_x0_5_opset17", model, [[x]], 17, ["image"], ["logits"],
               training=PRESERVE)


def case_efficientnet(root):
    # SiLU (Sigmoid * Mul), squeeze-excitation (GlobalAveragePool, 1x1 convs, Sigmoid scaling),
    # depthwise 5x5 convolutions with stride 2.
    torch.manual_seed(14)
    model = _prepared(torchvision.models.efficientnet_b0(weights=None), 14, (4, 3, 64, 64))
    x = torch.randn(1, 3, 64, 64)
    write_case(root, "efficientnet_b0_opset13", model, [[x]], 13, ["image"], ["logits"])


def case_vgg11(root):
    # VGG11's convolution stack unchanged; at 32x32 it ends at 512x1x1, so the 7x7 adaptive pool
    # and the 25088x4096 classifier (400 MB of weights) give way to a CIFAR-sized head.
    torch.manual_seed(15)
    model = torchvision.models.vgg11(weights=None)
    model.avgpool = nn.Identity()
    model.classifier = nn.Sequential(nn.Linear(512, 256), nn.ReLU(True), nn.Dropout(),
                                     nn.Linear(256, 256), nn.ReLU(True), nn.Dropout(),
                                     nn.Linear(256, 10))
    x = torch.randn(2, 3, 32, 32)
    scale_outputs(model, model.classifier[-1], torch.randn(4, 3, 32, 32))
    write_case(root, "vgg11_opset11", model, [[x]], 11, ["image"], ["logits"])


# ---------------------------------------------------------------------------------------------
# Hand-built families


class TinyYoloV2(nn.Module):
    """Tiny-YOLOv2 (VOC) layout at half width: 416x416 in, 13x13x125 out (5 anchors x 25).

    Darknet's sixth max-pool has stride 1 and pads right/bottom by repeating the edge, which
    exports as Pad(mode=edge) before MaxPool.
    """

    def __init__(self, widths=(8, 16, 32, 64, 128, 256, 512, 512)):
        super().__init__()
        layers, cin = [], 3
        for i, w in enumerate(widths):
            layers += [nn.Conv2d(cin, w, 3, padding=1, bias=False), nn.BatchNorm2d(w),
                       nn.LeakyReLU(0.1)]
            if i < 5:
                layers.append(nn.MaxPool2d(2, 2))
            elif i == 5:
                layers += [nn.ReplicationPad2d((0, 1, 0, 1)), nn.MaxPool2d(2, 1)]
            cin = w
        self.features = nn.Sequential(*layers)
        self.head = nn.Conv2d(cin, 125, 1)

    def forward(self, x):
        return self.head(self.features(x))


class IRBlock(nn.Module):
    """ArcFace's improved residual unit: BN-Conv-BN-PReLU-Conv-BN plus a projected shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout),
            nn.PReLU(cout), nn.Conv2d(cout, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout))
        self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        return self.body(x) + self.shortcut(x)


class FaceEmbedder(nn.Module):
    """ArcFace-style (IR-ResNet, small widths): 112x112 face -> L2-normalised 128-d embedding."""

    def __init__(self, widths=(16, 32, 64, 128), dim=128):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(widths[0]), nn.PReLU(widths[0]))
        blocks, cin = [], widths[0]
        for w in widths:
            blocks.append(IRBlock(cin, w, 2))
            cin = w
        self.blocks = nn.Sequential(*blocks)
        self.out_bn = nn.BatchNorm2d(cin)
        self.dropout = nn.Dropout(0.4)
        self.fc = nn.Linear(cin * 7 * 7, dim)
        # BatchNorm1d on a rank-2 tensor: BatchNormalization over [N, C].
        self.features = nn.BatchNorm1d(dim)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        x = torch.flatten(self.dropout(self.out_bn(x)), 1)
        emb = self.features(self.fc(x))
        return F.normalize(emb, dim=1), emb


class EmotionFerPlus(nn.Module):
    """The FER+ emotion CNN layout (VGG-like, 64x64 grey in, 8 emotions out) at half width."""

    def __init__(self):
        super().__init__()
        plan = [(32, 2), (64, 2), (128, 3), (128, 3)]
        layers, cin = [], 1
        for width, convs in plan:
            for _ in range(convs):
                layers += [nn.Conv2d(cin, width, 3, padding=1), nn.ReLU()]
                cin = width
            layers += [nn.MaxPool2d(2), nn.Dropout(0.25)]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(cin * 4 * 4, 512), nn.ReLU(),
                                        nn.Dropout(0.5), nn.Linear(512, 512), nn.ReLU(),
                                        nn.Dropout(0.5), nn.Linear(512, 8))

    def forward(self, x):
        return self.classifier(self.features(x))


def case_tiny_yolov2(root):
    torch.manual_seed(16)
    model = _prepared(TinyYoloV2(), 16, (2, 3, 416, 416))
    x = torch.rand(1, 3, 416, 416)
    write_case(root, "tiny_yolov2_opset13", model, [[x]], 13, ["image"], ["grid"],
               training=PRESERVE)


def case_arcface(root):
    torch.manual_seed(17)
    model = _prepared(FaceEmbedder(), 17, (4, 3, 112, 112))
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.PReLU):
                m.weight.uniform_(0.05, 0.4)    # per-channel slopes, not one shared 0.25
    x = torch.randn(2, 3, 112, 112)
    write_case(root, "arcface_opset11", model, [[x]], 11, ["face"], ["embedding", "raw"])


def case_emotion_ferplus(root):
    torch.manual_seed(18)
    model = EmotionFerPlus()
    x = torch.rand(2, 1, 64, 64) * 255.0     # raw grey levels, as FER+ takes them
    with torch.no_grad():
        model.features[0].weight.div_(255.0)
    scale_outputs(model, model.classifier[-1], torch.rand(4, 1, 64, 64) * 255.0)
    write_case(root, "emotion_ferplus_opset17", model, [[x]], 17, ["image"], ["scores"])


CASES = {
    "mobilenet_v2_opset11": case_mobilenet_v2,
    "squeezenet1_1_opset13": case_squeezenet,
    "shufflenet_v2_x0_5_opset17": case_shufflenet,
    "efficientnet_b0_opset13": case_efficientnet,
    "vgg11_opset11": case_vgg11,
    "tiny_yolov2_opset13": case_tiny_yolov2,
    "arcface_opset11": case_arcface,
    "emotion_ferplus_opset17": case_emotion_ferplus,
}
