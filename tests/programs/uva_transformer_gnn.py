"""Phillip Lippe's UvA deep learning tutorials 6 and 7 (Transformers and multi-head attention; graph neural
networks) at tiny sizes on synthetic data. ``PART`` picks one.

Tutorial 6's idioms: ``scaled_dot_product`` by ``torch.matmul(q, k.transpose(-2, -1))``, ``/ math.sqrt(d_k)``
and ``attn_logits.masked_fill(mask == 0, -9e15)``; ``expand_mask`` adding the head dims by ``while
mask.ndim < 4: mask = mask.unsqueeze(0)``; ``MultiheadAttention`` with one ``qkv_proj`` reshaped to
``(batch_size, seq_length, self.num_heads, 3*self.head_dim)``, ``permute(0, 2, 1, 3)``, ``qkv.chunk(3,
dim=-1)``, ``nn.init.xavier_uniform_`` and ``bias.data.fill_(0)`` in ``_reset_parameters``; an
``EncoderBlock`` with ``nn.ReLU(inplace=True)`` in its ``linear_net`` and post-norms; ``TransformerEncoder``
over ``nn.ModuleList`` with ``get_attention_maps``; ``PositionalEncoding`` from ``torch.exp(torch.arange(0,
d_model, 2).float() * (-math.log(10000.0) / d_model))`` written by ``pe[:, 0::2] = torch.sin(position *
div_term)`` and kept by ``register_buffer('pe', pe, persistent=False)``; ``CosineWarmupScheduler(
optim.lr_scheduler._LRScheduler)`` overriding ``get_lr`` from ``self.base_lrs`` and ``self.last_epoch``
with numpy's ``np.cos``, stepped every iteration; the reverse task's ``ReverseDataset``
(``torch.randint(self.num_categories, size=(self.size, self.seq_len))``, ``torch.flip(inp_data,
dims=(0,))``), ``F.one_hot(inp_data, num_classes=...).float()`` inputs, ``F.cross_entropy(preds.view(-1,
preds.size(-1)), labels.view(-1))`` and ``(preds.argmax(dim=-1) == labels).float().mean()``; hparams
kept in a ``SimpleNamespace`` as Lightning's ``self.hparams``.

Tutorial 7's: ``GCNLayer`` by ``adj_matrix.sum(dim=-1, keepdims=True)`` and ``torch.bmm(adj_matrix,
node_feats)``, checked on the tutorial's 4-node graph after ``layer.projection.weight.data =
torch.Tensor([[1., 0.], [0., 1.]])``; ``GATLayer`` with ``nn.Parameter(torch.Tensor(num_heads, 2 *
c_out))``, ``nn.init.xavier_uniform_(self.a.data, gain=1.414)``, ``adj_matrix.nonzero(as_tuple=False)``,
``torch.index_select(input=node_feats_flat, index=edge_indices_row, dim=0)``, ``torch.einsum('bhc,hc->bh',
a_input, self.a)``, ``attn_logits.new_zeros(adj_matrix.shape + (self.num_heads,)).fill_(-9e15)``, the
masked write ``attn_matrix[adj_matrix[..., None].repeat(1, 1, 1, self.num_heads) == 1] =
attn_logits.reshape(-1)`` and ``torch.einsum('bijh,bjhc->bihc', attn_probs, node_feats)``; a node
classifier over both layers trained with ``x[mask]`` losses and ``(x[mask].argmax(dim=-1) ==
y[mask]).sum().float() / mask.sum()``."""

# ruff: noqa: B007  (the tutorial's spelling is the point: unused loop names)
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from shim import F, nn, optim, torch

data = torch.utils.data

PART = "transformer"  # or "gnn"
DROPOUT = 0.0  # the tutorial's dropout (its reverse task trains without)
SHUFFLE = True


def scaled_dot_product(q, k, v, mask=None):
    d_k = q.size()[-1]
    attn_logits = torch.matmul(q, k.transpose(-2, -1))
    attn_logits = attn_logits / math.sqrt(d_k)
    if mask is not None:
        attn_logits = attn_logits.masked_fill(mask == 0, -9e15)
    attention = F.softmax(attn_logits, dim=-1)
    values = torch.matmul(attention, v)
    return values, attention


# Helper function to support different mask shapes.
# Output shape supports (batch_size, number of heads, seq length, seq length)
# If 2D: broadcasted over batch size and number of heads
# If 3D: broadcasted over number of heads
# If 4D: leave as is
def expand_mask(mask):
    assert mask.ndim >= 2, "Mask must be at least 2-dimensional with seq_length x seq_length"
    if mask.ndim == 3:
        mask = mask.unsqueeze(1)
    while mask.ndim < 4:
        mask = mask.unsqueeze(0)
    return mask


class MultiheadAttention(nn.Module):
    def __init__(self, input_dim, embed_dim, num_heads):
        super().__init__()
        assert embed_dim % num_heads == 0, "Embedding dimension must be 0 modulo number of heads."
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        # Stack all weight matrices 1...h together for efficiency
        # Note that in many implementations you see "bias=False" which is optional
        self.qkv_proj = nn.Linear(input_dim, 3 * embed_dim)
        self.o_proj = nn.Linear(embed_dim, embed_dim)
        self._reset_parameters()

    def _reset_parameters(self):
        # Original Transformer initialization, see PyTorch documentation
        nn.init.xavier_uniform_(self.qkv_proj.weight)
        self.qkv_proj.bias.data.fill_(0)
        nn.init.xavier_uniform_(self.o_proj.weight)
        self.o_proj.bias.data.fill_(0)

    def forward(self, x, mask=None, return_attention=False):
        batch_size, seq_length, _ = x.size()
        if mask is not None:
            mask = expand_mask(mask)
        qkv = self.qkv_proj(x)
        # Separate Q, K, V from linear output
        qkv = qkv.reshape(batch_size, seq_length, self.num_heads, 3 * self.head_dim)
        qkv = qkv.permute(0, 2, 1, 3)  # [Batch, Head, SeqLen, Dims]
        q, k, v = qkv.chunk(3, dim=-1)
        # Determine value outputs
        values, attention = scaled_dot_product(q, k, v, mask=mask)
        values = values.permute(0, 2, 1, 3)  # [Batch, SeqLen, Head, Dims]
        values = values.reshape(batch_size, seq_length, self.embed_dim)
        o = self.o_proj(values)
        if return_attention:
            return o, attention
        else:
            return o


class EncoderBlock(nn.Module):
    def __init__(self, input_dim, num_heads, dim_feedforward, dropout=0.0):
        """
        Inputs:
            input_dim - Dimensionality of the input
            num_heads - Number of heads to use in the attention block
            dim_feedforward - Dimensionality of the hidden layer in the MLP
            dropout - Dropout probability to use in the dropout layers
        """
        super().__init__()
        # Attention layer
        self.self_attn = MultiheadAttention(input_dim, input_dim, num_heads)
        # Two-layer MLP
        self.linear_net = nn.Sequential(
            nn.Linear(input_dim, dim_feedforward),
            nn.Dropout(dropout),
            nn.ReLU(inplace=True),
            nn.Linear(dim_feedforward, input_dim),
        )
        # Layers to apply in between the main layers
        self.norm1 = nn.LayerNorm(input_dim)
        self.norm2 = nn.LayerNorm(input_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        # Attention part
        attn_out = self.self_attn(x, mask=mask)
        x = x + self.dropout(attn_out)
        x = self.norm1(x)
        # MLP part
        linear_out = self.linear_net(x)
        x = x + self.dropout(linear_out)
        x = self.norm2(x)
        return x


class TransformerEncoder(nn.Module):
    def __init__(self, num_layers, **block_args):
        super().__init__()
        self.layers = nn.ModuleList([EncoderBlock(**block_args) for _ in range(num_layers)])

    def forward(self, x, mask=None):
        for l in self.layers:  # noqa: E741  (the tutorial's name)
            x = l(x, mask=mask)
        return x

    def get_attention_maps(self, x, mask=None):
        attention_maps = []
        for l in self.layers:  # noqa: E741
            _, attn_map = l.self_attn(x, mask=mask, return_attention=True)
            attention_maps.append(attn_map)
            x = l(x)
        return attention_maps


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        """
        Inputs
            d_model - Hidden dimensionality of the input.
            max_len - Maximum length of a sequence to expect.
        """
        super().__init__()
        # Create matrix of [SeqLen, HiddenDim] representing the positional encoding for max_len inputs
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0)
        # register_buffer => Tensor which is not a parameter, but should be part of the modules state.
        # Used for tensors that need to be on the same device as the module.
        # persistent=False tells PyTorch to not add the buffer to the state dict (e.g. when we save the model)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)]
        return x


class CosineWarmupScheduler(optim.lr_scheduler._LRScheduler):
    def __init__(self, optimizer, warmup, max_iters):
        self.warmup = warmup
        self.max_num_iters = max_iters
        super().__init__(optimizer)

    def get_lr(self):
        lr_factor = self.get_lr_factor(epoch=self.last_epoch)
        return [base_lr * lr_factor for base_lr in self.base_lrs]

    def get_lr_factor(self, epoch):
        lr_factor = 0.5 * (1 + np.cos(np.pi * epoch / self.max_num_iters))
        if epoch <= self.warmup:
            lr_factor *= epoch * 1.0 / self.warmup
        return lr_factor


class TransformerPredictor(nn.Module):
    def __init__(self, input_dim, model_dim, num_classes, num_heads, num_layers, lr, warmup, max_iters, dropout=0.0,
                 input_dropout=0.0):  # fmt: skip
        super().__init__()
        self.hparams = SimpleNamespace(
            input_dim=input_dim, model_dim=model_dim, num_classes=num_classes, num_heads=num_heads,
            num_layers=num_layers, lr=lr, warmup=warmup, max_iters=max_iters, dropout=dropout,
            input_dropout=input_dropout,
        )  # fmt: skip
        self._create_model()

    def _create_model(self):
        # Input dim -> Model dim
        self.input_net = nn.Sequential(
            nn.Dropout(self.hparams.input_dropout), nn.Linear(self.hparams.input_dim, self.hparams.model_dim)
        )
        # Positional encoding for sequences
        self.positional_encoding = PositionalEncoding(d_model=self.hparams.model_dim)
        # Transformer
        self.transformer = TransformerEncoder(
            num_layers=self.hparams.num_layers,
            input_dim=self.hparams.model_dim,
            dim_feedforward=2 * self.hparams.model_dim,
            num_heads=self.hparams.num_heads,
            dropout=self.hparams.dropout,
        )
        # Output classifier per sequence lement
        self.output_net = nn.Sequential(
            nn.Linear(self.hparams.model_dim, self.hparams.model_dim),
            nn.LayerNorm(self.hparams.model_dim),
            nn.ReLU(inplace=True),
            nn.Dropout(self.hparams.dropout),
            nn.Linear(self.hparams.model_dim, self.hparams.num_classes),
        )

    def forward(self, x, mask=None, add_positional_encoding=True):
        """
        Inputs:
            x - Input features of shape [Batch, SeqLen, input_dim]
            mask - Mask to apply on the attention outputs (optional)
            add_positional_encoding - If True, we add the positional encoding to the input.
                                      Might not be desired for some tasks.
        """
        x = self.input_net(x)
        if add_positional_encoding:
            x = self.positional_encoding(x)
        x = self.transformer(x, mask=mask)
        x = self.output_net(x)
        return x

    @torch.no_grad()
    def get_attention_maps(self, x, mask=None, add_positional_encoding=True):
        x = self.input_net(x)
        if add_positional_encoding:
            x = self.positional_encoding(x)
        attention_maps = self.transformer.get_attention_maps(x, mask=mask)
        return attention_maps

    def configure_optimizers(self):
        optimizer = optim.Adam(self.parameters(), lr=self.hparams.lr)
        # We don't return the lr scheduler because we need to apply it per iteration, not per epoch
        self.lr_scheduler = CosineWarmupScheduler(
            optimizer, warmup=self.hparams.warmup, max_iters=self.hparams.max_iters
        )
        return optimizer


class ReverseDataset(data.Dataset):
    def __init__(self, num_categories, seq_len, size):
        super().__init__()
        self.num_categories = num_categories
        self.seq_len = seq_len
        self.size = size
        self.data = torch.randint(self.num_categories, size=(self.size, self.seq_len))

    def __len__(self):
        return self.size

    def __getitem__(self, idx):
        inp_data = self.data[idx]
        labels = torch.flip(inp_data, dims=(0,))
        return inp_data, labels


class GCNLayer(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.projection = nn.Linear(c_in, c_out)

    def forward(self, node_feats, adj_matrix):
        """
        Inputs:
            node_feats - Tensor with node features of shape [batch_size, num_nodes, c_in]
            adj_matrix - Batch of adjacency matrices of the graph. If there is an edge from i to j,
                         adj_matrix[b,i,j]=1 else 0. Supports directed edges by non-symmetric matrices.
                         Assumes to already have added the identity connections.
                         Shape: [batch_size, num_nodes, num_nodes]
        """
        # Num neighbours = number of incoming edges
        num_neighbours = adj_matrix.sum(dim=-1, keepdims=True)
        node_feats = self.projection(node_feats)
        node_feats = torch.bmm(adj_matrix, node_feats)
        node_feats = node_feats / num_neighbours
        return node_feats


class GATLayer(nn.Module):
    def __init__(self, c_in, c_out, num_heads=1, concat_heads=True, alpha=0.2):
        """
        Inputs:
            c_in - Dimensionality of input features
            c_out - Dimensionality of output features
            num_heads - Number of heads, i.e. attention mechanisms to apply in parallel. The
                        output features are equally split up over the heads if concat_heads=True.
            concat_heads - If True, the output of the different heads is concatenated instead of averaged.
            alpha - Negative slope of the LeakyReLU activation.
        """
        super().__init__()
        self.num_heads = num_heads
        self.concat_heads = concat_heads
        if self.concat_heads:
            assert c_out % num_heads == 0, "Number of output features must be a multiple of the count of heads."
            c_out = c_out // num_heads
        # Sub-modules and parameters needed in the layer
        self.projection = nn.Linear(c_in, c_out * num_heads)
        self.a = nn.Parameter(torch.Tensor(num_heads, 2 * c_out))  # One per head
        self.leakyrelu = nn.LeakyReLU(alpha)
        # Initialization from the original implementation
        nn.init.xavier_uniform_(self.projection.weight.data, gain=1.414)
        nn.init.xavier_uniform_(self.a.data, gain=1.414)

    def forward(self, node_feats, adj_matrix, print_attn_probs=False):
        """
        Inputs:
            node_feats - Input features of the node. Shape: [batch_size, c_in]
            adj_matrix - Adjacency matrix including self-connections. Shape: [batch_size, num_nodes, num_nodes]
            print_attn_probs - If True, the attention weights are printed during the forward pass
                               (for debugging purposes)
        """
        batch_size, num_nodes = node_feats.size(0), node_feats.size(1)
        # Apply linear layer and sort nodes by head
        node_feats = self.projection(node_feats)
        node_feats = node_feats.view(batch_size, num_nodes, self.num_heads, -1)
        # We need to calculate the attention logits for every edge in the adjacency matrix
        # Doing this on all possible combinations of nodes is very expensive
        # => Create a tensor of [W*h_i||W*h_j] with i and j being the indices of all edges
        edges = adj_matrix.nonzero(as_tuple=False)  # Returns indices where the adjacency matrix is not 0 => edges
        node_feats_flat = node_feats.view(batch_size * num_nodes, self.num_heads, -1)
        edge_indices_row = edges[:, 0] * num_nodes + edges[:, 1]
        edge_indices_col = edges[:, 0] * num_nodes + edges[:, 2]
        a_input = torch.cat(
            [
                torch.index_select(input=node_feats_flat, index=edge_indices_row, dim=0),
                torch.index_select(input=node_feats_flat, index=edge_indices_col, dim=0),
            ],
            dim=-1,
        )  # Index select returns a tensor with node_feats_flat being indexed at the desired positions along dim=0
        # Calculate attention MLP output (independent for each head)
        attn_logits = torch.einsum("bhc,hc->bh", a_input, self.a)
        attn_logits = self.leakyrelu(attn_logits)
        # Map list of attention values back into a matrix
        attn_matrix = attn_logits.new_zeros(adj_matrix.shape + (self.num_heads,)).fill_(-9e15)
        attn_matrix[adj_matrix[..., None].repeat(1, 1, 1, self.num_heads) == 1] = attn_logits.reshape(-1)
        # Weighted average of attention
        attn_probs = F.softmax(attn_matrix, dim=2)
        if print_attn_probs:
            print("Attention probs\n", attn_probs.permute(0, 3, 1, 2))
        node_feats = torch.einsum("bijh,bjhc->bihc", attn_probs, node_feats)
        # If heads should be concatenated, we can do this by reshaping. Otherwise, take mean
        if self.concat_heads:
            node_feats = node_feats.reshape(batch_size, num_nodes, -1)
        else:
            node_feats = node_feats.mean(dim=2)
        return node_feats


class GNNModel(nn.Module):
    """A node classifier of a GCN layer and a GAT layer (the tutorial's GNNModel, over dense adjacency)."""

    def __init__(self, c_in, c_hidden, c_out, num_heads=2):
        super().__init__()
        self.gcn = GCNLayer(c_in, c_hidden)
        self.act_fn = nn.ReLU(inplace=True)
        self.gat = GATLayer(c_hidden, c_hidden, num_heads=num_heads)
        self.head = nn.Linear(c_hidden, c_out)

    def forward(self, x, adj_matrix):
        x = self.act_fn(self.gcn(x, adj_matrix))
        x = self.act_fn(self.gat(x, adj_matrix))
        return self.head(x)


def build():
    torch.manual_seed(42)
    if PART == "transformer":
        return TransformerPredictor(
            input_dim=6, model_dim=8, num_heads=2, num_classes=6, num_layers=1, dropout=DROPOUT, lr=5e-4 * 10,
            warmup=2, max_iters=10,
        )  # fmt: skip
    return GNNModel(c_in=3, c_hidden=8, c_out=3)


def transformer(model, steps, record):
    torch.manual_seed(0)
    dataset = ReverseDataset(6, 5, 24)
    train_loader = data.DataLoader(dataset, batch_size=8, shuffle=SHUFFLE, drop_last=True)
    optimizer = model.configure_optimizers()
    model.train()
    for i, (inp_data, labels) in zip(range(steps), train_loader):
        # Fetch data and transform categories to one-hot vectors
        inp_data = F.one_hot(inp_data, num_classes=model.hparams.num_classes).float()
        # Perform prediction and calculate loss and accuracy
        preds = model(inp_data, add_positional_encoding=True)
        loss = F.cross_entropy(preds.view(-1, preds.size(-1)), labels.view(-1))
        acc = (preds.argmax(dim=-1) == labels).float().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model.lr_scheduler.step()  # Step per iteration
        record["losses"].append(loss.item())
        record["accs"].append(acc.item())
        record["lrs"].append(optimizer.param_groups[0]["lr"])
    record["last_lr"] = model.lr_scheduler.get_last_lr()
    record["state_keys"] = sorted(model.state_dict())[:3]  # no 'pe': it is not persistent
    data_input, labels = next(iter(data.DataLoader(dataset, batch_size=2)))
    inp_data = F.one_hot(data_input, num_classes=model.hparams.num_classes).float()
    attention_maps = model.get_attention_maps(inp_data)
    record["attention"] = [list(attention_maps[0].shape), attention_maps[0][0, 0].tolist()]
    mask = torch.tril(torch.ones(5, 5))
    values, attention = scaled_dot_product(*(torch.ones(1, 5, 2) * torch.arange(5.0).view(1, 5, 1),) * 3, mask=mask)
    record["masked"] = [values.tolist(), attention[0, 1].tolist()]
    return record


def gnn(model, steps, record):
    # The tutorial's example graph and its hand-set projection
    node_feats = torch.arange(8, dtype=torch.float32).view(1, 4, 2)
    adj_matrix = torch.Tensor([[[1, 1, 0, 0], [1, 1, 1, 1], [0, 1, 1, 1], [0, 1, 1, 1]]])
    layer = GCNLayer(c_in=2, c_out=2)
    layer.projection.weight.data = torch.Tensor([[1.0, 0.0], [0.0, 1.0]])
    layer.projection.bias.data = torch.Tensor([0.0, 0.0])
    with torch.no_grad():
        out_feats = layer(node_feats, adj_matrix)
    record["gcn_example"] = out_feats.tolist()
    gat = GATLayer(2, 2, num_heads=2)
    gat.projection.weight.data = torch.Tensor([[1.0, 0.0], [0.0, 1.0]])
    gat.projection.bias.data = torch.Tensor([0.0, 0.0])
    gat.a.data = torch.Tensor([[-0.2, 0.3], [0.1, -0.1]])
    with torch.no_grad():
        out_feats = gat(node_feats, adj_matrix, print_attn_probs=False)
    record["gat_example"] = out_feats.tolist()

    # node classification on two random graphs with train/val masks
    rng = np.random.RandomState(0)
    adj = (rng.rand(2, 7, 7) < 0.35).astype(np.float32)
    adj = np.maximum(adj, adj.transpose(0, 2, 1))
    adj[:, range(7), range(7)] = 1  # self-connections
    x = torch.tensor(rng.randn(2, 7, 3).astype(np.float32))
    y = torch.tensor(rng.randint(0, 3, (2, 7)))
    adj_matrix = torch.tensor(adj)
    train_mask = torch.tensor(rng.rand(2, 7) < 0.6)
    val_mask = ~train_mask
    loss_module = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=2e-3)
    for _ in range(steps):
        model.train()
        out = model(x, adj_matrix)
        loss = loss_module(out[train_mask], y[train_mask])
        acc = (out[train_mask].argmax(dim=-1) == y[train_mask]).sum().float() / train_mask.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
        record["accs"].append(acc.item())
    model.eval()
    with torch.no_grad():
        out = model(x, adj_matrix)
        record["val_acc"] = ((out[val_mask].argmax(dim=-1) == y[val_mask]).sum().float() / val_mask.sum()).item()
        record["val_logits"] = out[val_mask].tolist()
    return record


def train(model, steps=3):
    record = {"losses": [], "accs": [], "lrs": []}
    if PART == "transformer":
        return transformer(model, steps, record)
    return gnn(model, steps, record)


if __name__ == "__main__":
    print(train(build()))
