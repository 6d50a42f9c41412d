"""yunjey/pytorch-tutorial's image captioning (encoder/decoder) and neural style transfer, at tiny sizes
on synthetic images and captions, with small convolutional nets in place of the pretrained ResNet-152 and
VGG-19. ``MODEL`` picks one.

Captioning's idioms: a ``Vocabulary`` wrapper (``word2idx``, ``idx2word``, ``__call__`` falling back to
``'<unk>'``, ``__len__``) built from ``collections.Counter`` counts; a ``collate_fn`` that sorts the
batch by ``data.sort(key=lambda x: len(x[1]), reverse=True)``, unzips it by ``zip(*data)``, stacks the
images by ``torch.stack(images, 0)`` and pads the captions into ``torch.zeros(len(captions),
max(lengths)).long()`` by ``targets[i, :end] = cap[:end]``; ``EncoderCNN`` keeping ``list(resnet.children())[:-1]``
in an ``nn.Sequential``, its features computed under ``torch.no_grad()`` then
``features.reshape(features.size(0), -1)`` and ``self.bn(self.linear(features))`` with
``nn.BatchNorm1d(embed_size, momentum=0.01)``; ``DecoderRNN.forward`` by ``torch.cat((features.unsqueeze(1),
embeddings), 1)``, ``pack_padded_sequence(embeddings, lengths, batch_first=True)`` into an LSTM and
``self.linear(hiddens[0])``; targets ``pack_padded_sequence(captions, lengths, batch_first=True)[0]``;
``params = list(decoder.parameters()) + list(encoder.linear.parameters()) + list(encoder.bn.parameters())``;
greedy ``sample`` by ``hiddens.squeeze(1)``, ``_, predicted = outputs.max(1)``, ``inputs =
self.embed(predicted).unsqueeze(1)`` and ``torch.stack(sampled_ids, 1)``, turned into words by
``sampled_ids[0].cpu().numpy()`` up to ``'<end>'``; ``encoder.eval()`` for the test image and
``torch.save(decoder.state_dict(), ...)``.

Style transfer's: a ``VGGNet`` whose ``forward`` walks ``self.vgg._modules.items()`` keeping the outputs
of the layers named in ``self.select = ['0', '5', '10', ...]``; ``target = content.clone().requires_grad_(True)``
trained by ``torch.optim.Adam([target], lr=..., betas=[0.5, 0.999])``; ``content_loss +=
torch.mean((f1 - f2)**2)``, Gram matrices by ``f1.view(c, h*w)`` and ``torch.mm(f1, f1.t())``, ``style_loss +=
torch.mean((f1 - f3)**2) / (c * h * w)``; and the saved image's denormalisation ``img = target.clone().squeeze()``
then ``(img * std + mean).clamp_(0, 1)``."""

# ruff: noqa: UP032, B007  (the tutorial's spelling is the point: .format and unused loop names)
from __future__ import annotations

import collections
import os
import tempfile

import numpy as np
from shim import nn, torch

pack_padded_sequence = nn.utils.rnn.pack_padded_sequence

MODEL = "captioning"  # or "style_transfer"
SHUFFLE = True
USE_CUDA = True  # the comparisons set False: both libraries on the CPU

embed_size = 8
hidden_size = 10
num_layers = 1
batch_size = 3
max_seq_length = 6

CAPTIONS = [
    "a cat on a mat",
    "a dog in the park",
    "two cats",
    "a red bus on the road",
    "a dog with a ball",
    "the park",
]


class Vocabulary:
    """Simple vocabulary wrapper."""

    def __init__(self):
        self.word2idx = {}
        self.idx2word = {}
        self.idx = 0

    def add_word(self, word):
        if word not in self.word2idx:
            self.word2idx[word] = self.idx
            self.idx2word[self.idx] = word
            self.idx += 1

    def __call__(self, word):
        if word not in self.word2idx:
            return self.word2idx["<unk>"]
        return self.word2idx[word]

    def __len__(self):
        return len(self.word2idx)


def build_vocab(captions, threshold):
    """Build a simple vocabulary wrapper."""
    counter = collections.Counter()
    for caption in captions:
        counter.update(caption.lower().split())
    # If the word frequency is less than 'threshold', then the word is discarded.
    words = [word for word, cnt in counter.items() if cnt >= threshold]
    # Create a vocab wrapper and add some special tokens.
    vocab = Vocabulary()
    vocab.add_word("<pad>")
    vocab.add_word("<start>")
    vocab.add_word("<end>")
    vocab.add_word("<unk>")
    # Add the words to the vocabulary.
    for word in words:
        vocab.add_word(word)
    return vocab


class CocoDataset(torch.utils.data.Dataset):
    """COCO Custom Dataset compatible with torch.utils.data.DataLoader (synthetic images here)."""

    def __init__(self, captions, vocab):
        self.captions = captions
        self.vocab = vocab
        self.images = np.random.RandomState(0).rand(len(captions), 3, 8, 8).astype(np.float32)

    def __getitem__(self, index):
        """Returns one data pair (image and caption)."""
        vocab = self.vocab
        image = torch.from_numpy(self.images[index])
        # Convert caption (string) to word ids.
        tokens = self.captions[index].lower().split()
        caption = []
        caption.append(vocab("<start>"))
        caption.extend([vocab(token) for token in tokens])
        caption.append(vocab("<end>"))
        target = torch.Tensor(caption)
        return image, target

    def __len__(self):
        return len(self.captions)


def collate_fn(data):
    """Creates mini-batch tensors from the list of tuples (image, caption)."""
    # Sort a data list by caption length (descending order).
    data.sort(key=lambda x: len(x[1]), reverse=True)
    images, captions = zip(*data)
    # Merge images (from tuple of 3D tensor to tuple of 4D tensor).
    images = torch.stack(images, 0)
    # Merge captions (from tuple of 1D tensor to 2D tensor).
    lengths = [len(cap) for cap in captions]
    targets = torch.zeros(len(captions), max(lengths)).long()
    for i, cap in enumerate(captions):
        end = lengths[i]
        targets[i, :end] = cap[:end]
    return images, targets, lengths


class TinyResNet(nn.Module):
    """The pretrained ResNet-152's stand-in: convolutions, a global pool and the ``fc`` the encoder drops."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, stride=2, padding=1)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(6, 12, 3, padding=1)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(12, 1000)


class EncoderCNN(nn.Module):
    def __init__(self, embed_size):
        """Load the pretrained ResNet-152 and replace top fc layer."""
        super().__init__()
        resnet = TinyResNet()
        modules = list(resnet.children())[:-1]  # delete the last fc layer.
        self.resnet = nn.Sequential(*modules)
        self.linear = nn.Linear(resnet.fc.in_features, embed_size)
        self.bn = nn.BatchNorm1d(embed_size, momentum=0.01)

    def forward(self, images):
        """Extract feature vectors from input images."""
        with torch.no_grad():
            features = self.resnet(images)
        features = features.reshape(features.size(0), -1)
        features = self.bn(self.linear(features))
        return features


class DecoderRNN(nn.Module):
    def __init__(self, embed_size, hidden_size, vocab_size, num_layers, max_seq_length=20):
        """Set the hyper-parameters and build the layers."""
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)
        self.max_seg_length = max_seq_length

    def forward(self, features, captions, lengths):
        """Decode image feature vectors and generates captions."""
        embeddings = self.embed(captions)
        embeddings = torch.cat((features.unsqueeze(1), embeddings), 1)
        packed = pack_padded_sequence(embeddings, lengths, batch_first=True)
        hiddens, _ = self.lstm(packed)
        outputs = self.linear(hiddens[0])
        return outputs

    def sample(self, features, states=None):
        """Generate captions for given image features using greedy search."""
        sampled_ids = []
        inputs = features.unsqueeze(1)
        for i in range(self.max_seg_length):
            hiddens, states = self.lstm(inputs, states)  # hiddens: (batch_size, 1, hidden_size)
            outputs = self.linear(hiddens.squeeze(1))  # outputs:  (batch_size, vocab_size)
            _, predicted = outputs.max(1)  # predicted: (batch_size)
            sampled_ids.append(predicted)
            inputs = self.embed(predicted)  # inputs: (batch_size, embed_size)
            inputs = inputs.unsqueeze(1)  # inputs: (batch_size, 1, embed_size)
        sampled_ids = torch.stack(sampled_ids, 1)  # sampled_ids: (batch_size, max_seq_length)
        return sampled_ids


class Captioner(nn.Module):
    def __init__(self):
        super().__init__()
        vocab = build_vocab(CAPTIONS, threshold=1)
        self.encoder = EncoderCNN(embed_size)
        self.decoder = DecoderRNN(embed_size, hidden_size, len(vocab), num_layers, max_seq_length)


class VGGNet(nn.Module):
    def __init__(self):
        """Select conv1_1 ~ conv5_1 activation maps."""
        super().__init__()
        self.select = ["0", "2", "5"]
        self.vgg = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(4, 4, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(4, 8, 3, padding=1),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        """Extract multiple convolutional feature maps."""
        features = []
        for name, layer in self.vgg._modules.items():
            x = layer(x)
            if name in self.select:
                features.append(x)
        return features


def build():
    torch.manual_seed(0)
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    if MODEL == "captioning":
        return Captioner().to(device)
    return VGGNet().to(device).eval()


def captioning(model, steps, device, record):
    vocab = build_vocab(CAPTIONS, threshold=1)
    encoder, decoder = model.encoder, model.decoder
    torch.manual_seed(1)
    data_loader = torch.utils.data.DataLoader(
        dataset=CocoDataset(CAPTIONS, vocab), batch_size=batch_size, shuffle=SHUFFLE, collate_fn=collate_fn
    )
    # Loss and optimizer
    criterion = nn.CrossEntropyLoss()
    params = list(decoder.parameters()) + list(encoder.linear.parameters()) + list(encoder.bn.parameters())
    optimizer = torch.optim.Adam(params, lr=0.01)
    # Train the models
    total_step = len(data_loader)
    done = 0
    for epoch in range(steps):
        for i, (images, captions, lengths) in enumerate(data_loader):
            if done == steps:
                break
            # Set mini-batch dataset
            images = images.to(device)
            captions = captions.to(device)
            targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]
            # Forward, backward and optimize
            features = encoder(images)
            outputs = decoder(features, captions, lengths)
            loss = criterion(outputs, targets)
            decoder.zero_grad()
            encoder.zero_grad()
            loss.backward()
            optimizer.step()
            done += 1
            record["losses"].append(loss.item())
            record["lines"].append(
                "Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}".format(epoch, steps, i, total_step, loss.item())
            )
            record["perplexities"].append(np.exp(loss.item()))
    record["encoder_frozen"] = [p.grad is None for p in encoder.resnet.parameters()]
    # Test: build models
    encoder.eval()  # eval mode (batchnorm uses moving mean/variance)
    image_tensor = torch.from_numpy(np.random.RandomState(9).rand(1, 3, 8, 8).astype(np.float32)).to(device)
    # Generate an caption from the image
    feature = encoder(image_tensor)
    sampled_ids = decoder.sample(feature)
    sampled_ids = sampled_ids[0].cpu().numpy()  # (1, max_seq_length) -> (max_seq_length)
    # Convert word_ids to words
    sampled_caption = []
    for word_id in sampled_ids:
        word = vocab.idx2word[word_id]
        sampled_caption.append(word)
        if word == "<end>":
            break
    record["sentence"] = " ".join(sampled_caption)
    # The encoder's linear layer feeds a BatchNorm1d: its bias's gradient is rounding noise, which Adam scales to
    # full steps, so the biases and running means of the two libraries part while every loss agrees; the
    # eval-mode feature follows them, so the greedy caption and the running variances are compared instead
    record["feature_shape"] = list(feature.shape)
    with tempfile.TemporaryDirectory() as folder:
        torch.save(decoder.state_dict(), os.path.join(folder, "decoder-1-1.ckpt"))
        torch.save(encoder.state_dict(), os.path.join(folder, "encoder-1-1.ckpt"))
        record["bn"] = torch.load(os.path.join(folder, "encoder-1-1.ckpt"))["bn.running_var"].tolist()
    return record


def style_transfer(vgg, steps, device, record):
    rng = np.random.RandomState(0)
    # Load content and style images (already normalised by ImageNet's mean and std)
    content = torch.from_numpy(rng.randn(1, 3, 8, 8).astype(np.float32)).to(device)
    style = torch.from_numpy(rng.randn(1, 3, 8, 8).astype(np.float32)).to(device)
    # Initialize a target image with the content image
    target = content.clone().requires_grad_(True)
    optimizer = torch.optim.Adam([target], lr=0.003 * 10, betas=[0.5, 0.999])
    style_weight = 100
    for step in range(steps):
        # Extract multiple(5) conv feature vectors
        target_features = vgg(target)
        content_features = vgg(content)
        style_features = vgg(style)
        style_loss = 0
        content_loss = 0
        for f1, f2, f3 in zip(target_features, content_features, style_features):
            # Compute content loss with target and content images
            content_loss += torch.mean((f1 - f2) ** 2)
            # Reshape convolutional feature maps
            _, c, h, w = f1.size()
            f1 = f1.view(c, h * w)
            f3 = f3.view(c, h * w)
            # Compute gram matrix
            f1 = torch.mm(f1, f1.t())
            f3 = torch.mm(f3, f3.t())
            # Compute style loss with target and style images
            style_loss += torch.mean((f1 - f3) ** 2) / (c * h * w)
        # Compute total loss, backprop and optimize
        loss = content_loss + style_weight * style_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
        record["lines"].append(
            "Step [{}/{}], Content Loss: {:.4f}, Style Loss: {:.4f}".format(
                step + 1, steps, content_loss.item(), style_loss.item()
            )
        )
    # Save the generated image
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    img = target.clone().squeeze()
    img = (img * std.to(device) + mean.to(device)).clamp_(0, 1)
    record["image"] = img[0].tolist()
    record["vgg_untouched"] = [p.grad is None for p in vgg.parameters()] == [False] * len(list(vgg.parameters()))
    return record


def train(model, steps=3):
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    record = {"losses": [], "lines": []}
    if MODEL == "captioning":
        record["perplexities"] = []
        return captioning(model, steps, device, record)
    return style_transfer(model, steps, device, record)


if __name__ == "__main__":
    print(train(build()))
