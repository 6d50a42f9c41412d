"""A GPT block as NVIDIA Megatron-LM's legacy model code writes it (fused_bias_gelu.py, fused_bias_dropout
.py, transformer.py, utils.py), trained at a tiny size on synthetic tokens with a Hugging Face style loop.

Its idioms: helpers decorated with ``@torch.jit.script`` (``bias_gelu``, ``bias_gelu_back`` and
``bias_dropout_add_fused_train`` with annotated arguments, calling an unscripted ``bias_dropout_add`` that
carries a ``# type:`` comment); ``GeLUFunction(torch.autograd.Function)`` whose backward returns ``tmp,
tmp``, the input's gradient also given for the bias (autograd sums it to the bias's shape);
``get_bias_dropout_add(training)`` closures; linear layers with ``skip_bias_add=True`` returning
``(output, bias)``; ``init_method_normal(sigma)`` and ``scaled_init_method_normal(sigma, num_layers)``
closures applied under ``torch.no_grad()``; ``torch.jit.Final`` annotations, ``@torch.jit.ignore`` and
``torch.jit.is_scripting()``; a module made by ``torch.jit.script(module)``; einops-style rearranges
written with ``view`` and ``permute`` (``b s (h d) -> b h s d`` and back); ``torch.baddbmm`` attention
scores with ``beta=0.0`` over ``torch.empty``, a causal mask by ``torch.tril(torch.ones(...)).view(...) <
0.5`` and ``masked_fill_(mask, -10000.0)``; ``torch.backends.cuda.matmul.allow_tf32 = True``; and the
loop: ``get_linear_schedule_with_warmup`` by ``LambdaLR``, gradient accumulation by ``loss /
GRAD_ACC``, ``torch.autocast(device_type="cuda", enabled=False)`` and ``torch.cuda.amp.GradScaler(
enabled=False)`` as written for a machine without CUDA, ``clip_grad_norm_``, ``zero_grad(set_to_none=True)``.
"""

# No ``from __future__ import annotations``: TorchScript reads the ``torch.jit.Final`` annotations as objects
import math

import numpy as np
from shim import F, lr_scheduler, nn, torch

DROPOUT = 0.1
GRAD_ACC = 2
FUSED = True  # False: the plain F.gelu and bias + dropout + residual
VOCAB, HIDDEN, HEADS, LAYERS, SEQ = 16, 8, 2, 2, 6


###### BIAS GELU FUSION/ NO AUTOGRAD ################
# 1/sqrt(2*pi)-> 0.3989423
# 1/sqrt(2)   -> 0.70710678
# sqrt(2/pi)  -> 0.79788456
# this function is tanh approximation of gelu
# actual gelu is:
# x * 0.5 * (1.0 + torch.erf(x * 0.70710678))


@torch.jit.script
def bias_gelu(bias, y):
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


# gradient of tanh approximation of gelu
# gradient of actual gelu is:
# 0.5 * (1. + torch.erf(x * 0.70710678)) + 0.3989423 * x * torch.exp(-0.5 * x * x)
@torch.jit.script
def bias_gelu_back(g, bias, y):
    x = bias + y
    tanh_out = torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))
    # sqrt(2/pi) * 3 * 0.044715 -> 0.1070322243
    ff = 0.5 * x * ((1 - tanh_out * tanh_out) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1 + tanh_out)
    return ff * g


class GeLUFunction(torch.autograd.Function):
    @staticmethod
    # bias is an optional argument
    def forward(ctx, input, bias):
        ctx.save_for_backward(input, bias)
        return bias_gelu(bias, input)

    @staticmethod
    def backward(ctx, grad_output):
        input, bias = ctx.saved_tensors
        tmp = bias_gelu_back(grad_output, bias, input)
        return tmp, tmp


bias_gelu_impl = GeLUFunction.apply


def bias_dropout_add(x, bias, residual, prob, training):
    # type: (Tensor, Tensor, Tensor, float, bool) -> Tensor
    out = torch.nn.functional.dropout(x + bias, p=prob, training=training)
    out = residual + out
    return out


def get_bias_dropout_add(training):
    def _bias_dropout_add(x, bias, residual, prob):
        return bias_dropout_add(x, bias, residual, prob, training)

    return _bias_dropout_add


@torch.jit.script
def bias_dropout_add_fused_train(
    x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor, prob: float
) -> torch.Tensor:
    return bias_dropout_add(x, bias, residual, prob, True)


@torch.jit.script
def bias_dropout_add_fused_inference(
    x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor, prob: float
) -> torch.Tensor:
    return bias_dropout_add(x, bias, residual, prob, False)


def init_method_normal(sigma):
    """Init method based on N(0, sigma)."""

    def init_(tensor):
        return torch.nn.init.normal_(tensor, mean=0.0, std=sigma)

    return init_


def scaled_init_method_normal(sigma, num_layers):
    """Init method based on N(0, sigma/sqrt(2*num_layers)."""
    std = sigma / math.sqrt(2.0 * num_layers)

    def init_(tensor):
        return torch.nn.init.normal_(tensor, mean=0.0, std=std)

    return init_


class LinearWithBias(nn.Module):
    """ColumnParallelLinear / RowParallelLinear on one rank: ``skip_bias_add`` hands the bias back."""

    skip_bias_add: torch.jit.Final[bool]

    def __init__(self, input_size, output_size, init_method, skip_bias_add=False):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(output_size, input_size))
        self.bias = nn.Parameter(torch.empty(output_size))
        with torch.no_grad():
            init_method(self.weight)
            self.bias.zero_()
        self.skip_bias_add = skip_bias_add

    def forward(self, input_):
        bias = self.bias if not self.skip_bias_add else None
        output = F.linear(input_, self.weight, bias)
        output_bias = self.bias if self.skip_bias_add else None
        return output, output_bias


class ParallelMLP(nn.Module):
    def __init__(self, init_method, output_layer_init_method):
        super().__init__()
        self.dense_h_to_4h = LinearWithBias(HIDDEN, 4 * HIDDEN, init_method, skip_bias_add=True)
        self.bias_gelu_fusion = FUSED
        self.dense_4h_to_h = LinearWithBias(4 * HIDDEN, HIDDEN, output_layer_init_method, skip_bias_add=True)

    def forward(self, hidden_states):
        # [s, b, 4hp]
        intermediate_parallel, bias_parallel = self.dense_h_to_4h(hidden_states)
        if self.bias_gelu_fusion:
            intermediate_parallel = bias_gelu_impl(intermediate_parallel, bias_parallel)
        else:
            intermediate_parallel = F.gelu(intermediate_parallel + bias_parallel, approximate="tanh")
        # [s, b, h]
        output, output_bias = self.dense_4h_to_h(intermediate_parallel)
        return output, output_bias


class ScaledMaskedSoftmax(nn.Module):
    """The softmax of masked, scaled scores; scripted by ``torch.jit.script`` as a whole module."""

    scale: torch.jit.Final[float]

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        scores = scores * self.scale
        scores = scores.masked_fill(mask, -10000.0)
        return torch.nn.functional.softmax(scores, dim=-1)

    @torch.jit.ignore
    def describe(self):
        return f"scale={self.scale}, scripting={torch.jit.is_scripting()}"


class ParallelAttention(nn.Module):
    def __init__(self, init_method, output_layer_init_method):
        super().__init__()
        self.hidden_size_per_attention_head = HIDDEN // HEADS
        self.num_attention_heads_per_partition = HEADS
        self.query_key_value = LinearWithBias(HIDDEN, 3 * HIDDEN, init_method)
        coeff = None
        self.norm_factor = math.sqrt(self.hidden_size_per_attention_head)
        self.scale_mask_softmax = torch.jit.script(ScaledMaskedSoftmax(1.0 if coeff is None else coeff))
        self.attention_dropout = nn.Dropout(DROPOUT)
        self.dense = LinearWithBias(HIDDEN, HIDDEN, output_layer_init_method, skip_bias_add=True)

    def forward(self, hidden_states, attention_mask):
        # hidden_states: [sq, b, h]
        mixed_x_layer, _ = self.query_key_value(hidden_states)
        # [sq, b, (np * 3 * hn)] --> [sq, b, np, 3 * hn]
        new_tensor_shape = mixed_x_layer.size()[:-1] + (
            self.num_attention_heads_per_partition,
            3 * self.hidden_size_per_attention_head,
        )
        mixed_x_layer = mixed_x_layer.view(*new_tensor_shape)
        # [sq, b, np, 3 * hn] --> 3 [sq, b, np, hn]
        (query_layer, key_layer, value_layer) = torch.split(mixed_x_layer, self.hidden_size_per_attention_head, dim=3)

        # [b, np, sq, sk]
        output_size = (query_layer.size(1), query_layer.size(2), query_layer.size(0), key_layer.size(0))
        # [sq, b, np, hn] -> [sq, b * np, hn]
        query_layer = query_layer.reshape(output_size[2], output_size[0] * output_size[1], -1)
        # [sk, b, np, hn] -> [sk, b * np, hn]
        key_layer = key_layer.view(output_size[3], output_size[0] * output_size[1], -1)
        # preallocting input tensor: [b * np, sq, sk]
        matmul_input_buffer = torch.empty(
            output_size[0] * output_size[1],
            output_size[2],
            output_size[3],
            dtype=query_layer.dtype,
            device=query_layer.device,
        )
        # Raw attention scores. [b * np, sq, sk]
        matmul_result = torch.baddbmm(
            matmul_input_buffer,
            query_layer.transpose(0, 1),  # [b * np, sq, hn]
            key_layer.transpose(0, 1).transpose(1, 2),  # [b * np, hn, sk]
            beta=0.0,
            alpha=(1.0 / self.norm_factor),
        )
        # change view to [b, np, sq, sk]
        attention_scores = matmul_result.view(*output_size)
        # attention scores and attention mask [b, np, sq, sk]
        attention_probs = self.scale_mask_softmax(attention_scores, attention_mask)
        attention_probs = self.attention_dropout(attention_probs)

        # einops: rearrange(value, "s b h d -> (b h) s d"), by view and permute
        s, b, h, d = value_layer.shape
        value_layer = value_layer.permute(1, 2, 0, 3).reshape(b * h, s, d)
        context_layer = torch.bmm(attention_probs.view(b * h, s, s), value_layer)
        # rearrange(context, "(b h) s d -> s b (h d)")
        context_layer = context_layer.view(b, h, s, d).permute(2, 0, 1, 3).contiguous().view(s, b, h * d)
        output, bias = self.dense(context_layer)
        return output, bias


class ParallelTransformerLayer(nn.Module):
    def __init__(self, init_method, output_layer_init_method):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(HIDDEN, eps=1e-5)
        self.self_attention = ParallelAttention(init_method, output_layer_init_method)
        self.hidden_dropout = DROPOUT
        self.post_attention_layernorm = nn.LayerNorm(HIDDEN, eps=1e-5)
        self.mlp = ParallelMLP(init_method, output_layer_init_method)
        self.bias_dropout_fusion = FUSED

    def forward(self, hidden_states, attention_mask):
        # Layer norm at the beginning of the transformer layer.
        layernorm_output = self.input_layernorm(hidden_states)
        attention_output, attention_bias = self.self_attention(layernorm_output, attention_mask)
        residual = hidden_states
        if self.bias_dropout_fusion:
            if self.training:
                bias_dropout_add_func = bias_dropout_add_fused_train
            else:
                bias_dropout_add_func = bias_dropout_add_fused_inference
        else:
            bias_dropout_add_func = get_bias_dropout_add(self.training)
        layernorm_input = bias_dropout_add_func(
            attention_output, attention_bias.expand_as(residual), residual, self.hidden_dropout
        )
        layernorm_output = self.post_attention_layernorm(layernorm_input)
        mlp_output, mlp_bias = self.mlp(layernorm_output)
        residual = layernorm_input
        output = bias_dropout_add_func(mlp_output, mlp_bias.expand_as(residual), residual, self.hidden_dropout)
        return output


class GPTModel(nn.Module):
    def __init__(self, init_method_std=0.02):
        super().__init__()
        init_method = init_method_normal(init_method_std)
        output_layer_init_method = scaled_init_method_normal(init_method_std, LAYERS)
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN)
        self.position_embeddings = nn.Embedding(SEQ, HIDDEN)
        init_method(self.word_embeddings.weight)
        init_method(self.position_embeddings.weight)
        self.layers = nn.ModuleList(
            [ParallelTransformerLayer(init_method, output_layer_init_method) for _ in range(LAYERS)]
        )
        self.final_layernorm = nn.LayerNorm(HIDDEN)

    def forward(self, input_ids, position_ids, attention_mask):
        # [b, s, h] -> [s, b, h]
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        hidden_states = embeddings.transpose(0, 1).contiguous()
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask)
        hidden_states = self.final_layernorm(hidden_states)
        # parallel_lm_logits: the tied embedding as output layer, [s, b, v] -> [b, s, v]
        logits = F.linear(hidden_states, self.word_embeddings.weight)
        return logits.transpose(0, 1).contiguous()


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
    def lr_lambda(current_step: int):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))

    return lr_scheduler.LambdaLR(optimizer, lr_lambda, last_epoch)


def get_ltor_masks_and_position_ids(data):
    """Build masks and position id for left to right model."""
    micro_batch_size, seq_length = data.size()
    attention_mask = torch.tril(torch.ones((1, seq_length, seq_length), device=data.device)).view(
        1, 1, seq_length, seq_length
    )
    position_ids = torch.arange(seq_length, dtype=torch.long, device=data.device)
    position_ids = position_ids.unsqueeze(0).expand_as(data)
    # Convert attention mask to binary:
    attention_mask = attention_mask < 0.5
    return attention_mask, position_ids


def build():
    torch.manual_seed(0)
    return GPTModel()


def train(model, steps=3):
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = torch.device("cuda" if torch.cuda.is_available() and False else "cpu")
    model.to(device)
    use_amp = device.type == "cuda"
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=steps)
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    rng = np.random.default_rng(0)
    record = {"losses": [], "lr": [], "norms": []}
    model.train()
    optimizer.zero_grad(set_to_none=True)
    for _step in range(steps):
        for _ in range(GRAD_ACC):
            tokens = torch.tensor(rng.integers(0, VOCAB, size=(2, SEQ + 1)))
            tokens[:, 1:] = (tokens[:, :-1] + 1) % VOCAB  # each next token: the previous one plus one
            data, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
            attention_mask, position_ids = get_ltor_masks_and_position_ids(data)
            with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
                logits = model(data, position_ids, attention_mask)
                loss = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1))
                loss = loss / GRAD_ACC
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        record["losses"].append(loss.item() * GRAD_ACC)
        record["lr"].append(scheduler.get_last_lr()[0])
        record["norms"].append(norm.item())
    model.eval()
    with torch.no_grad():
        data = torch.tensor([[1, 2, 3, 4, 5, 6]])
        attention_mask, position_ids = get_ltor_masks_and_position_ids(data)
        logits = model(data, position_ids, attention_mask)
        record["next_tokens"] = logits.argmax(-1).flatten().tolist()
        record["eval_logit_sum"] = logits.sum().item()
    record["softmax_module"] = model.layers[0].self_attention.scale_mask_softmax.describe()
    return record


if __name__ == "__main__":
    print(train(build()))
