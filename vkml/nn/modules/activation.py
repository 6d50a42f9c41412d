"""``torch.nn.modules.activation``."""

from ._export import export

export(
    globals(),
    [
        "Threshold",
        "ReLU",
        "RReLU",
        "Hardtanh",
        "ReLU6",
        "Sigmoid",
        "Hardsigmoid",
        "Tanh",
        "SiLU",
        "Mish",
        "Hardswish",
        "ELU",
        "CELU",
        "SELU",
        "GLU",
        "GELU",
        "Hardshrink",
        "LeakyReLU",
        "LogSigmoid",
        "Softplus",
        "Softshrink",
        "MultiheadAttention",
        "PReLU",
        "Softsign",
        "Tanhshrink",
        "Softmin",
        "Softmax",
        "Softmax2d",
        "LogSoftmax",
    ],
)
