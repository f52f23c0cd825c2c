"""Model families for the wide benchmark table (bench/run.sh --set wide) that torchvision does
not provide: a U-Net, a DB-style OCR detector, a CRNN recogniser, a mel-spectrogram front end, a
keyword-spotting CNN, an HF-style BERT with an attention mask and a GPT-2-style decoder step with a
KV cache. Weights are random; each is written in the layout its family usually has, so the export
shows the ops users' models of that family bring.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


def conv_bn_relu(c_in, c_out, k=3, stride=1, groups=1):
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(c_out),
                         nn.ReLU(inplace=True))


class UNet(nn.Module):
    """A small U-Net segmenter: four levels (16..128 channels) of double 3x3 convs, max-pool down,
    2x2 transposed-conv up, skip connections by concatenation, a 1x1 classifier."""

    def __init__(self, classes=2, chans=(16, 32, 64, 128)):
        super().__init__()
        self.down = nn.ModuleList()
        c = 3
        for ch in chans:
            self.down.append(nn.Sequential(conv_bn_relu(c, ch), conv_bn_relu(ch, ch)))
            c = ch
        self.up = nn.ModuleList()
        self.merge = nn.ModuleList()
        for ch in reversed(chans[:-1]):
            self.up.append(nn.ConvTranspose2d(c, ch, 2, 2))
            self.merge.append(nn.Sequential(conv_bn_relu(2 * ch, ch), conv_bn_relu(ch, ch)))
            c = ch
        self.head = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips[:-1])):
            x = merge(torch.cat([up(x), skip], 1))
        return self.head(x)


class DbDetector(nn.Module):
    """A DB (differentiable binarization) text detector: ResNet-18 stages as the backbone, an FPN
    (1x1 laterals, nearest top-down upsampling, 3x3 smoothing, all levels upsampled to 1/4 and
    concatenated) and the probability head (3x3 conv, two 2x2 transposed convs, sigmoid)."""

    def __init__(self, inner=64):
        super().__init__()
        r = torchvision.models.resnet18()
        self.stem = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool)
        self.stages = nn.ModuleList([r.layer1, r.layer2, r.layer3, r.layer4])
        self.lateral = nn.ModuleList([nn.Conv2d(c, inner, 1, bias=False) for c in (64, 128, 256, 512)])
        self.smooth = nn.ModuleList([nn.Conv2d(inner, inner // 4, 3, padding=1, bias=False) for _ in range(4)])
        self.head = nn.Sequential(conv_bn_relu(inner, inner // 4), nn.ConvTranspose2d(inner // 4, inner // 4, 2, 2),
                                  nn.BatchNorm2d(inner // 4), nn.ReLU(inplace=True),
                                  nn.ConvTranspose2d(inner // 4, 1, 2, 2), nn.Sigmoid())

    def forward(self, x):
        x = self.stem(x)
        feats = []
        for s in self.stages:
            x = s(x)
            feats.append(x)
        lat = [l(f) for l, f in zip(self.lateral, feats)]
        for i in (2, 1, 0):
            lat[i] = lat[i] + F.interpolate(lat[i + 1], scale_factor=2.0, mode="nearest")
        outs = [F.interpolate(s(l), scale_factor=2.0 ** i, mode="nearest") if i else s(l)
                for i, (s, l) in enumerate(zip(self.smooth, lat))]
        return self.head(torch.cat(outs, 1))


class Crnn(nn.Module):
    """A CRNN text-line recogniser: a VGG-style conv stack that pools the 32-pixel height to 1, a
    two-layer bidirectional LSTM over the width, a linear layer to the classes. CTC is the training
    loss, so the graph ends at the per-step log-probabilities."""

    def __init__(self, classes=37, hidden=256):
        super().__init__()
        cfg = [(1, 64, (2, 2)), (64, 128, (2, 2)), (128, 256, None), (256, 256, (2, 1)), (256, 512, None),
               (512, 512, (2, 1))]
        layers = []
        for c_in, c_out, pool in cfg:
            layers.append(conv_bn_relu(c_in, c_out))
            if pool:
                layers.append(nn.MaxPool2d(pool, pool))
        layers.append(nn.Conv2d(512, 512, (2, 1)))  # height 2 -> 1
        self.cnn = nn.Sequential(*layers)
        self.rnn = nn.LSTM(512, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        f = self.cnn(x).squeeze(2).permute(0, 2, 1)  # [batch, width, channels]
        out, _ = self.rnn(f)
        return F.log_softmax(self.fc(out), -1)


class MelFrontEnd(nn.Module):
    """A log-mel spectrogram front end as exported models spell it without an STFT op: a Conv1d
    whose kernels are the Hann-windowed cosine and sine DFT rows (n_fft 400, hop 160), the power
    spectrum, a MatMul with an 80-band triangular mel filterbank, log."""

    def __init__(self, n_fft=400, hop=160, mels=80, rate=16000):
        super().__init__()
        bins = n_fft // 2 + 1
        n = torch.arange(n_fft, dtype=torch.float64)
        k = torch.arange(bins, dtype=torch.float64).unsqueeze(1)
        window = torch.hann_window(n_fft, periodic=True, dtype=torch.float64)
        ang = 2 * math.pi * k * n / n_fft
        basis = torch.cat([torch.cos(ang) * window, -torch.sin(ang) * window]).float().unsqueeze(1)
        self.dft = nn.Conv1d(1, 2 * bins, n_fft, hop, bias=False)
        with torch.no_grad():
            self.dft.weight.copy_(basis)
        self.bins = bins
        self.register_buffer("fbank", self.mel_filterbank(bins, mels, rate))

    @staticmethod
    def mel_filterbank(bins, mels, rate):
        mel = lambda f: 2595 * math.log10(1 + f / 700)
        hz = lambda m: 700 * (10 ** (m / 2595) - 1)
        edges = [hz(mel(0) + (mel(rate / 2) - mel(0)) * i / (mels + 1)) for i in range(mels + 2)]
        freqs = torch.linspace(0, rate / 2, bins)
        fb = torch.zeros(bins, mels)
        for m in range(mels):
            lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
            fb[:, m] = torch.clamp(torch.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)), min=0)
        return fb

    def forward(self, wave):
        spec = self.dft(wave.unsqueeze(1))  # [batch, 2*bins, frames]
        re, im = spec[:, :self.bins], spec[:, self.bins:]
        power = (re * re + im * im).transpose(1, 2)  # [batch, frames, bins]
        return torch.log(torch.matmul(power, self.fbank) + 1e-6)


class KwsCnn(nn.Module):
    """A keyword-spotting DS-CNN on 49 frames x 40 mel bands: a 10x4 stride-2 conv, four
    depthwise-separable blocks, global average pooling, a linear layer to 12 keywords."""

    def __init__(self, ch=172, classes=12):
        super().__init__()
        layers = [nn.Conv2d(1, ch, (10, 4), 2, (5, 1), bias=False), nn.BatchNorm2d(ch), nn.ReLU(inplace=True)]
        for _ in range(4):
            layers += [conv_bn_relu(ch, ch, 3, groups=ch), conv_bn_relu(ch, ch, 1)]
        self.net = nn.Sequential(*layers)
        self.fc = nn.Linear(ch, classes)

    def forward(self, x):
        return self.fc(self.net(x).mean((2, 3)))


class HfBertLayer(nn.Module):
    """A BERT layer in Hugging Face's layout: separate Q/K/V projections, the additive mask on the
    scores, erf GELU, post-norm LayerNorms."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def split(self, x):
        b, s, d = x.shape
        return x.view(b, s, self.heads, d // self.heads).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        b, s, d = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads) + mask
        ctx = torch.matmul(torch.softmax(scores, -1), v).permute(0, 2, 1, 3).reshape(b, s, d)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))


class HfBert(nn.Module):
    """An HF-style BERT (4 layers, hidden 256, 4 heads) taking input_ids, attention_mask and
    token_type_ids, returning the last hidden state and the tanh pooler output."""

    def __init__(self, vocab=8000, d=256, heads=4, layers=4, ff=1024, max_len=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        # Four token types, not BERT's two: the benchmarks feed random ids in 0..3 to every int input.
        self.typ = nn.Embedding(4, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList([HfBertLayer(d, heads, ff) for _ in range(layers)])
        self.pool = nn.Linear(d, d)
        # Position ids sliced from a buffer, as Hugging Face's BERT does (a Slice, not a Range).
        self.register_buffer("position_ids", torch.arange(max_len).unsqueeze(0))

    def forward(self, ids, mask, types):
        x = self.ln(self.tok(ids) + self.pos(self.position_ids[:, :ids.shape[1]]) + self.typ(types))
        # The extended mask: 0 where attended, -10000 where masked (fits float16 too).
        ext = (1.0 - mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, ext)
        return x, torch.tanh(self.pool(x[:, 0]))


class Gpt2Step(nn.Module):
    """One GPT-2-style decoder step with a KV cache: a new token attends to `past` cached keys and
    values plus its own (pre-norm blocks, fused QKV projection, tanh GELU, tied LM head); the step
    returns the logits and the grown caches. 6 layers, hidden 384, 6 heads."""

    def __init__(self, vocab=8000, d=384, heads=6, layers=6, max_len=1024):
        super().__init__()
        self.heads, self.d = heads, d
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({"ln1": nn.LayerNorm(d), "qkv": nn.Linear(d, 3 * d), "proj": nn.Linear(d, d),
                                              "ln2": nn.LayerNorm(d), "fc": nn.Linear(d, 4 * d),
                                              "out": nn.Linear(4 * d, d)}))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, ids, mask, *past):
        b, s = ids.shape
        h, hd = self.heads, self.d // self.heads
        start = past[0].shape[2]
        pos = torch.arange(start, start + s).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        ext = (1.0 - mask[:, None, None, :].to(torch.float32)) * -10000.0
        presents = []
        for i, blk in enumerate(self.blocks):
            q, k, v = blk["qkv"](blk["ln1"](x)).split(self.d, dim=2)
            q, k, v = (t.view(b, s, h, hd).transpose(1, 2) for t in (q, k, v))
            k = torch.cat([past[2 * i], k], 2)
            v = torch.cat([past[2 * i + 1], v], 2)
            presents += [k, v]
            att = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + ext, -1)
            x = x + blk["proj"](torch.matmul(att, v).transpose(1, 2).reshape(b, s, self.d))
            x = x + blk["out"](F.gelu(blk["fc"](blk["ln2"](x)), approximate="tanh"))
        logits = torch.matmul(self.ln_f(x), self.wte.weight.t())
        return (logits, *presents)


def vit_tiny():
    """ViT-Ti/16: torchvision's VisionTransformer at hidden 192, 3 heads, 12 layers, 224 input."""
    return torchvision.models.VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=3,
                                                hidden_dim=192, mlp_dim=768)
