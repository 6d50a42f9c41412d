"""``torch.nn.modules.module``."""

from ._export import export

export(
    globals(),
    ["Module"],
    {
        "_IncompatibleKeys": "vkml.nn.loading",
        "_addindent": "vkml.nn.module",  # custom __repr__s nest their children's with it
        "register_module_forward_hook": "vkml.nn.module",
        "register_module_forward_pre_hook": "vkml.nn.module",
    },
)
