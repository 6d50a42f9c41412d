"""float64 erf, erfc and gelu, within 1 ulp: the float64 twins of ``special.erf``, ``erfs.erfc``
and ``special.gelu``.

|x| < 1: erf(x) = 2/sqrt(pi) * x * (1 - x^2/3 + x^4 P(x^2)), the Taylor series (truncated below
2^-64), its first two terms in double-double. |x| >= 1: erfc(x) = e^(-x^2) * g(x) with
g(x) = erfc(x) e^(x^2), a smooth, slowly varying function: on each of 15 intervals [1.25^i,
1.25^(i+1)) (up to 28.4, past erfc's underflow at 27.3) g is its Taylor polynomial at the
interval's centre, degree 20, whose coefficients come from the exact recurrence
g' = 2x g - 2/sqrt(pi), g^(k+1) = 2x g^(k) + 2k g^(k-1) evaluated with mpmath at 300 bits
(truncation below 2^-64 relative), the constant term a double-double; e^(-x^2) is ``f64math``'s
exp of the double-double -x^2. erf = 1 - erfc there, erfc = 1 - erf below 1, erfc(-x) = 2 - erfc(x),
gelu(x) = x * erfc(-x/sqrt(2)) / 2 with x/sqrt(2) a double-double.
"""

from __future__ import annotations

import math

from ...ir.builder import eq, isnan, select
from ...ir.core import Value
from .f64 import _quiet
from .f64dd import f64, fast_two_sum, horner, i64, mul_dd, mul_dd_const, pow2, scale, two_prod, two_sum
from .f64math import _abs, _with_sign_of, exp_parts, reduce_exp

TWO_OVER_SQRT_PI = (float.fromhex("0x1.20dd750429b6dp+0"), float.fromhex("0x1.1ae3a914fed80p-56"))
SQRT_HALF = (float.fromhex("0x1.6a09e667f3bcdp-1"), float.fromhex("-0x1.bdd3413b26456p-55"))
THIRD = (float.fromhex("0x1.5555555555555p-2"), float.fromhex("0x1.5555555555555p-56"))
# erf(x) / (2/sqrt(pi) x) = 1 - z/3 + z^2 * sum (-1)^n z^(n-2) / (n! (2n+1)), n >= 2, z = x^2 <= 1
ERF_T = [(-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(2, 22)]
# Interval i is [1.25^i, 1.25^(i+1)); its row: (centre, g(centre) as a dd, g's Taylor coefficients 1..20)
G_TAYLOR = [
    tuple(float.fromhex(v) for v in row)
    for row in (
        (
            "0x1.2000000000000p+0",
            "0x1.9531e09b149b5p-2",
            "-0x1.aa513235e9c37p-58",
            "-0x1.e78b356770fbbp-3",
            "0x1.05e72521ca1b8p-3",
            "-0x1.01343a2c92265p-4",
            "0x1.d4e711a2df97dp-6",
            "-0x1.910a5d7c0a71fp-7",
            "0x1.446c5166ccf50p-8",
            "-0x1.f38c6d05105bbp-10",
            "0x1.6fd9a57ac0b67p-11",
            "-0x1.041e38d558d9dp-12",
            "0x1.62743c04645fdp-14",
            "-0x1.d2b2ffdd6a887p-16",
            "0x1.2997dabd7de1fp-17",
            "-0x1.705f7c172bf7dp-19",
            "0x1.bb66db0ff12e4p-21",
            "-0x1.03e92082de030p-22",
            "0x1.2933b8c6544c9p-24",
            "-0x1.4be6bd420bdd1p-26",
            "0x1.6a689486ac60bp-28",
            "-0x1.83531357dd469p-30",
            "0x1.958ebe8989d49p-32",
        ),
        (
            "0x1.6800000000000p+0",
            "0x1.59b9baf5fee95p-2",
            "-0x1.aa7f0e4ac24a1p-56",
            "-0x1.6e36ec7993d65p-3",
            "0x1.60ec72c20bda7p-4",
            "-0x1.3ad71f6db401ep-5",
            "0x1.071a6151d2923p-6",
            "-0x1.9f81d666f309fp-8",
            "0x1.3811f52f0301ep-9",
            "-0x1.c0307b720b418p-11",
            "0x1.3501d391d619ap-12",
            "-0x1.9a85af70e4d46p-14",
            "0x1.077e1fd36f719p-15",
            "-0x1.47a45ea33dc6ap-17",
            "0x1.8b7b917ac9ef4p-19",
            "-0x1.d0424898cbc63p-21",
            "0x1.097296cef0566p-22",
            "-0x1.281fb1a9e95f6p-24",
            "0x1.42aee4b26895bp-26",
            "-0x1.57de82605b7dbp-28",
            "0x1.66bda1880ef80p-30",
            "-0x1.6ebc5d9f32e94p-32",
            "0x1.6fb240fcf1b67p-34",
        ),
        (
            "0x1.c200000000000p+0",
            "0x1.22c46950ee67dp-2",
            "0x1.79d4a00af4dc5p-57",
            "-0x1.0a76a3a0416c8p-3",
            "0x1.c4911c08a73b9p-5",
            "-0x1.686f4ef7bfa49p-6",
            "0x1.0f8e8f41cf97ep-7",
            "-0x1.85a33cfc8099ep-9",
            "0x1.0b8b87e242e09p-10",
            "-0x1.611f182176737p-12",
            "0x1.c175771e394b8p-14",
            "-0x1.14a1bb2be07c0p-15",
            "0x1.4a1ee8faa7fd9p-17",
            "-0x1.7eb7b3bf33603p-19",
            "0x1.afd326a3051a4p-21",
            "-0x1.daf4b459ff18fp-23",
            "0x1.fdf3b0deca489p-25",
            "-0x1.0b9463556e156p-26",
            "0x1.12c64590b487dp-28",
            "-0x1.14625dabee961p-30",
            "0x1.10901444b5a8ap-32",
            "-0x1.07c1c4a7fa893p-34",
            "0x1.f54af782d9cacp-37",
        ),
        (
            "0x1.1940000000000p+1",
            "0x1.e30241f362ea5p-3",
            "-0x1.b487f3a711864p-57",
            "-0x1.78a5789d780dfp-4",
            "0x1.14d9dcc18b140p-5",
            "-0x1.829b4f1f200bcp-7",
            "0x1.01ed31ac48662p-8",
            "-0x1.4a5e4dc1eb384p-10",
            "0x1.97bb6bc8b8572p-12",
            "-0x1.e65fe315dfcf9p-14",
            "0x1.191dff55a88b7p-15",
            "-0x1.3b9be09007cf0p-17",
            "0x1.58cb3054ed9dep-19",
            "-0x1.6f2694c402463p-21",
            "0x1.7da1a7a204fafp-23",
            "-0x1.83ba3b37b6dd2p-25",
            "0x1.817a3d613bc88p-27",
            "-0x1.776ba4cd2da6ap-29",
            "0x1.668177f40d29bp-31",
            "-0x1.4ff9edb61a340p-33",
            "0x1.353ddf8e08ec3p-35",
            "-0x1.17c15fa2df3ebp-37",
            "0x1.f1d0e143d0214p-40",
        ),
        (
            "0x1.5f90000000000p+1",
            "0x1.8d1027f7e325cp-3",
            "-0x1.901eff65af9bbp-58",
            "-0x1.03935127bc690p-4",
            "0x1.44b946a60bbebp-6",
            "-0x1.86750be05c5a2p-8",
            "0x1.c4f1c0b32aa75p-10",
            "-0x1.fc72b4fbc1693p-12",
            "0x1.14daf8f9ccae2p-13",
            "-0x1.2521b34be7755p-15",
            "0x1.2e4fb45358a08p-17",
            "-0x1.302e580749cf7p-19",
            "0x1.2b079fd1e4b9ap-21",
            "-0x1.1f92f3d71e79bp-23",
            "0x1.0ed9563392371p-25",
            "-0x1.f42b3ba9f261cp-28",
            "0x1.c529f8c7ab5b3p-30",
            "-0x1.93366a4255df2p-32",
            "0x1.609987429da92p-34",
            "-0x1.2f3ffdd6d2ebep-36",
            "0x1.00aa6f8b78420p-38",
            "-0x1.abd415acee53ap-41",
            "0x1.5f4dd7547730fp-43",
        ),
        (
            "0x1.b774000000000p+1",
            "0x1.43ca99e91a76ep-3",
            "0x1.b982d5d6205a6p-58",
            "-0x1.5e7c44bd96bc4p-5",
            "0x1.6f7a4d0f8c450p-7",
            "-0x1.7626ea3884b8fp-9",
            "0x1.72b953582d52fp-11",
            "-0x1.662021bcff406p-13",
            "0x1.51d3660fe8c75p-15",
            "-0x1.379f3f3c7dfa6p-17",
            "0x1.196f050cdc3a4p-19",
            "-0x1.f23e88e9653d1p-22",
            "0x1.b0b4eb5510defp-24",
            "-0x1.7104006a9745fp-26",
            "0x1.35465ad98ab5ep-28",
            "-0x1.fdd92551252f1p-31",
            "0x1.9d95bdba685a5p-33",
            "-0x1.4a612d41c5488p-35",
            "0x1.040922d08597ep-37",
            "-0x1.93892507dffa7p-40",
            "0x1.34d31ec44514ep-42",
            "-0x1.d26c51ea80f09p-45",
            "0x1.5bb44e02425d3p-47",
        ),
        (
            "0x1.12a8800000000p+2",
            "0x1.06758f5f5b0e1p-3",
            "-0x1.86929ad61d9cdp-60",
            "-0x1.d1b84bceff958p-6",
            "0x1.94153cd42cedfp-8",
            "-0x1.575107b93e4ddp-10",
            "0x1.1df44dd296892p-12",
            "-0x1.d37774d4cdbf8p-15",
            "0x1.775057dab989ep-17",
            "-0x1.2838d431b57a5p-19",
            "0x1.cc045aaed4a84p-22",
            "-0x1.5fa44fde99db1p-24",
            "0x1.08c9b8266cb19p-26",
            "-0x1.890c5d15ea0eap-29",
            "0x1.1faeaac055325p-31",
            "-0x1.9f804e16fc6fep-34",
            "0x1.282ee913cde3dp-36",
            "-0x1.a0fc5cca246aep-39",
            "0x1.21fa81785b809p-41",
            "-0x1.8e943f5e82de4p-44",
            "0x1.0ece364a65bcap-46",
            "-0x1.6be966d8143dep-49",
            "0x1.e3c3779ddb78dp-52",
        ),
        (
            "0x1.5752a00000000p+2",
            "0x1.a7a966e4949bep-4",
            "0x1.001be9b6b4003p-61",
            "-0x1.31c683e7594a3p-6",
            "0x1.b2b76ee92dc88p-9",
            "-0x1.308a280117c3ap-11",
            "0x1.a4c08b88d9716p-14",
            "-0x1.1ec3690514219p-16",
            "0x1.81d72ab842326p-19",
            "-0x1.0056da32d1985p-21",
            "0x1.508082aff5c33p-24",
            "-0x1.b494b79a4d430p-27",
            "0x1.1802bc67bf747p-29",
            "-0x1.633e1ec1617ecp-32",
            "0x1.bde31e492b4aap-35",
            "-0x1.14eed4eef5388p-37",
            "0x1.5487f42269a48p-40",
            "-0x1.9ea06c4f85818p-43",
            "0x1.f404927d48f7ep-46",
            "-0x1.2aafb1a484d14p-48",
            "0x1.619810124bb24p-51",
            "-0x1.9ee0145f73910p-54",
            "0x1.e28cc5ad33fb6p-57",
        ),
        (
            "0x1.ad27480000000p+2",
            "0x1.54eb1ce94eb7ep-4",
            "0x1.e90339ac7f650p-60",
            "-0x1.8e26b874b5b82p-7",
            "0x1.cc47dac16836cp-10",
            "-0x1.076ef48848a23p-12",
            "0x1.2aa7efa90f58cp-15",
            "-0x1.4f6ed7e03830bp-18",
            "0x1.7551a38e07029p-21",
            "-0x1.9bce9472c91cap-24",
            "0x1.c2574067de198p-27",
            "-0x1.e8543901243c4p-30",
            "0x1.069496c170dd8p-32",
            "-0x1.181cadde5e6b8p-35",
            "0x1.28760ff8fe8a7p-38",
            "-0x1.3758b921ab9e3p-41",
            "0x1.4483108f939c7p-44",
            "-0x1.4fbbcdf8f8ec1p-47",
            "0x1.58d393aeece55p-50",
            "-0x1.5fa62e199ce3dp-53",
            "0x1.641b6dd97c7bcp-56",
            "-0x1.662796d8a58a9p-59",
            "0x1.65cb63af6066bp-62",
        ),
        (
            "0x1.0c388d0000000p+3",
            "0x1.11c82acfd83f9p-4",
            "-0x1.22fb4bc13753cp-59",
            "-0x1.01b6cefb24406p-7",
            "0x1.e1ee18fbadf5ap-11",
            "-0x1.bfa66188987c4p-14",
            "0x1.9d20fd96973fdp-17",
            "-0x1.7adbbad48da36p-20",
            "0x1.5945c5ae8c39bp-23",
            "-0x1.38be75f07bf1bp-26",
            "0x1.1994c4c16e811p-29",
            "-0x1.f80eb4002ce07p-33",
            "0x1.c08a36290adc8p-36",
            "-0x1.8cdc460e65364p-39",
            "0x1.5d2a15e377268p-42",
            "-0x1.3180d4e568fbfp-45",
            "0x1.09d8f2e27e31cp-48",
            "-0x1.cc32fba52b90dp-52",
            "0x1.8c36eda790638p-55",
            "-0x1.535a0492e8587p-58",
            "0x1.2128bac8754f7p-61",
            "-0x1.ea4a2690fd6f5p-65",
            "0x1.9d9692bf0f066p-68",
        ),
        (
            "0x1.4f46b04000000p+3",
            "0x1.b724b0eae3dccp-5",
            "-0x1.1e3cef93780aap-59",
            "-0x1.4c5212c81be19p-8",
            "0x1.f4c38d319d598p-12",
            "-0x1.77a9980238c01p-15",
            "0x1.189c889432643p-18",
            "-0x1.a17441d5d9d58p-22",
            "0x1.3538d1457e687p-25",
            "-0x1.c837a69e0c4fep-29",
            "0x1.4f2d6324b06bbp-32",
            "-0x1.ea85db36e0f71p-36",
            "0x1.65821aff904c6p-39",
            "-0x1.038a47d447c84p-42",
            "0x1.775fb56e87d1bp-46",
            "-0x1.0e690637ce418p-49",
            "0x1.841d62db5db00p-53",
            "-0x1.157b18249659cp-56",
            "0x1.8b4af90e3903dp-60",
            "-0x1.1886fdea1fe19p-63",
            "0x1.8cb6ee06d4cd4p-67",
            "-0x1.17806666f2d92p-70",
            "0x1.886fb965eb03cp-74",
        ),
        (
            "0x1.a3185c5000000p+3",
            "0x1.5fe175c866b88p-5",
            "-0x1.b1029b3022ec3p-60",
            "-0x1.ab6a3b4bbb397p-9",
            "0x1.02d81ba319ad7p-12",
            "-0x1.38a17ce1259dbp-16",
            "0x1.788a00909595cp-20",
            "-0x1.c44139444dd40p-24",
            "0x1.0ed9ef0508faep-27",
            "-0x1.438947abaa4aep-31",
            "0x1.816c865e2fa57p-35",
            "-0x1.c9eaeb03badabp-39",
            "0x1.0f4c8bfc4fedep-42",
            "-0x1.409ea06549509p-46",
            "0x1.79e9bf37adf5ep-50",
            "-0x1.bc49202f8846ep-54",
            "0x1.047bb40d09234p-57",
            "-0x1.30a876e5b7387p-61",
            "0x1.636afd9327c46p-65",
            "-0x1.9d96811369557p-69",
            "0x1.e0125e7345987p-73",
            "-0x1.15ed8ba63e71bp-76",
            "0x1.41019ea4ab5aap-80",
        ),
        (
            "0x1.05ef39b200000p+4",
            "0x1.19cbf1f26cb07p-5",
            "-0x1.5c993b875d2b9p-59",
            "-0x1.1264dd8dcc8e0p-9",
            "0x1.0ab20ec44b086p-13",
            "-0x1.02bd708922f9dp-17",
            "0x1.f521dc549143bp-22",
            "-0x1.e46cc0f2eb2cap-26",
            "0x1.d36ef7e8b5cbap-30",
            "-0x1.c23b802458e1dp-34",
            "0x1.b0e4cfae15d03p-38",
            "-0x1.9f7cb78ff38f4p-42",
            "0x1.8e144aa84d9e9p-46",
            "-0x1.7cbbc784d47e0p-50",
            "0x1.6b8285585468cp-54",
            "-0x1.5a76e4128aec7p-58",
            "0x1.49a63f96dbe59p-62",
            "-0x1.391ce604f3a38p-66",
            "0x1.28e610fd722b4p-70",
            "-0x1.190be1c4b0e52p-74",
            "0x1.0997601ea0f77p-78",
            "-0x1.f520f77160334p-83",
            "0x1.d7fc1fe332f3ap-87",
        ),
        (
            "0x1.476b081e80000p+4",
            "0x1.c32cdf8a495b7p-6",
            "-0x1.2f77b5b21134ep-61",
            "-0x1.5fecdc3230776p-10",
            "0x1.122f1ccfdede7p-14",
            "-0x1.aabaaca5da339p-19",
            "0x1.4baec487080a4p-23",
            "-0x1.018138199c97bp-27",
            "0x1.8f5dcb6f1c056p-32",
            "-0x1.3554b512d59d8p-36",
            "0x1.dea1f66f04dc1p-41",
            "-0x1.71deff813fe6ap-45",
            "0x1.1d7ed36b3b763p-49",
            "-0x1.b83b0cb3f7bacp-54",
            "0x1.5307295478f06p-58",
            "-0x1.04cb1a2e5a7a7p-62",
            "0x1.90c5108b22e25p-67",
            "-0x1.33971649c42e9p-71",
            "0x1.d79e4ace90db6p-76",
            "-0x1.69272a4481681p-80",
            "0x1.14408e040c859p-84",
            "-0x1.a626217bb407fp-89",
            "0x1.4230cb2914313p-93",
        ),
        (
            "0x1.9945ca2620000p+4",
            "0x1.69183b468a72fp-6",
            "0x1.27a63dd25a60dp-60",
            "-0x1.c30aa702dcad2p-11",
            "0x1.197bb0ead1729p-15",
            "-0x1.5f10ff54d2335p-20",
            "0x1.b5851a9b53894p-25",
            "-0x1.106d1e0d0d7b8p-29",
            "0x1.5300b5cd02920p-34",
            "-0x1.a5886fba18b27p-39",
            "0x1.05e19dc9daf22p-43",
            "-0x1.45263c7701378p-48",
            "0x1.9366c446bca18p-53",
            "-0x1.f41d211086a52p-58",
            "0x1.35c6a91da08d9p-62",
            "-0x1.7f7924d64e914p-67",
            "0x1.da5a4335f4132p-72",
            "-0x1.252b1e9752930p-76",
            "0x1.6a1ccdd0cb67ep-81",
            "-0x1.bef1187475f6fp-86",
            "0x1.139ea0cae3a5bp-90",
            "-0x1.53b074caaca4ep-95",
            "0x1.a258d6ef34d42p-100",
        ),
    )
]
_G_LIMIT = 28.0  # erfc(28) underflows: beyond it erfc is 0


def erf_small_dd(x_hi: Value, x_lo: Value) -> tuple[Value, Value]:
    """erf(x) as a dd for a dd x with |x| < 1.05 and |x_hi| >= 2^-400 or 0 (about 2^-60 relative)."""
    z_hi, z_lo = two_prod(x_hi, x_hi)
    z_lo = z_lo + 2.0 * x_hi * x_lo
    t_hi, t_lo = mul_dd_const(z_hi, z_lo, THIRD[0], THIRD[1])
    q = z_hi * z_hi * horner(z_hi, ERF_T)
    s_hi, s_lo = two_sum(f64(1.0), -t_hi)
    s_hi, s_lo = fast_two_sum(s_hi, s_lo + (q - t_lo))
    p_hi, p_lo = mul_dd(x_hi, x_lo, s_hi, s_lo)
    return mul_dd_const(p_hi, p_lo, TWO_OVER_SQRT_PI[0], TWO_OVER_SQRT_PI[1])


def erfc_large(u_hi: Value, u_lo: Value) -> tuple[Value, Value, Value]:
    """erfc(u) = 2^k (m_hi + m_lo) for a dd u in [1, 28]: (int64 k, m_hi, m_lo), m in [0.05, 2]."""
    row = G_TAYLOR[0]
    centre, c_hi, c_lo = f64(row[0]), f64(row[1]), f64(row[2])
    coeffs = [f64(c) for c in row[3:]]
    for i in range(1, len(G_TAYLOR)):
        inside = u_hi >= 1.25**i  # exact: 1.25^i needs 2i + 1 bits
        row = G_TAYLOR[i]
        centre, c_hi, c_lo = (
            select(inside, f64(row[0]), centre),
            select(inside, f64(row[1]), c_hi),
            select(inside, f64(row[2]), c_lo),
        )
        coeffs = [select(inside, f64(c), old) for c, old in zip(row[3:], coeffs)]
    h = (u_hi - centre) + u_lo  # u_hi - centre is exact (Sterbenz)
    acc = coeffs[-1]
    for c in reversed(coeffs[:-1]):
        acc = acc * h + c
    g_hi, g_lo = fast_two_sum(c_hi, h * acc + c_lo)
    s_hi, s_lo = two_prod(u_hi, u_hi)
    s_lo = s_lo + 2.0 * u_hi * u_lo  # u^2
    k, r_hi, r_lo = reduce_exp(-s_hi)
    r_hi, r_lo = fast_two_sum(r_hi, r_lo - s_lo)
    e_hi, e_lo = exp_parts(r_hi, r_lo)
    m_hi, m_lo = mul_dd(e_hi, e_lo, g_hi, g_lo)
    return k, m_hi, m_lo


def _clamp_large(a: Value) -> Value:
    return select(a < 1.0, f64(1.0), select(a < _G_LIMIT, a, f64(_G_LIMIT)))


def erf(x: Value) -> Value:
    """The error function for float64.

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: erf(±inf) = ±1, erf(±0) = ±0, |x| >= 5.93 gives ±1; a NaN comes back quieted.
    """
    a = _abs(x)
    tiny = a < 2.0**-400  # erf(a) = 2a/sqrt(pi) to 2^-800: the product, scaled to stay exact
    s = select(tiny, a * 2.0**200, select(a < 1.0, a, f64(0.5)))
    e_hi, e_lo = erf_small_dd(s, f64(0.0))
    near = select(tiny, (e_hi + e_lo) * 2.0**-200, e_hi + e_lo)
    k, m_hi, m_lo = erfc_large(_clamp_large(select(a < 6.0, a, f64(6.0))), f64(0.0))
    p = pow2(k)  # k >= -58 below 6
    o_hi, o_lo = two_sum(f64(1.0), -(m_hi * p))
    far = o_hi + (o_lo - m_lo * p)
    out = select(a < 1.0, near, select(a < 6.0, far, f64(1.0)))
    return select(isnan(x), _quiet(x), _with_sign_of(out, x))


def _erfc_dd_parts(u_hi: Value, u_lo: Value) -> tuple[Value, Value, Value]:
    """erfc(u) = 2^k (m_hi + m_lo) for a dd u >= 0 (finite): below 1 as 1 - erf(u) with k = 0."""
    small = u_hi < 1.0
    e_hi, e_lo = erf_small_dd(select(small, u_hi, f64(0.5)), select(small, u_lo, f64(0.0)))
    n_hi, n_lo = two_sum(f64(1.0), -e_hi)
    n_hi, n_lo = fast_two_sum(n_hi, n_lo - e_lo)
    k, m_hi, m_lo = erfc_large(_clamp_large(u_hi), select(small | (u_hi >= _G_LIMIT), f64(0.0), u_lo))
    return select(small, i64(0), k), select(small, n_hi, m_hi), select(small, n_lo, m_lo)


def erfc(x: Value) -> Value:
    """The complementary error function 1 - erf(x) for float64, accurate in the right tail.

    Precision: ≤ 1 ulp of the correctly rounded result, subnormal results included.
    Special values: erfc(-inf) = 2, erfc(+inf) = 0, erfc(±0) = 1, 0 from 27.23 on; a NaN comes back quieted.
    """
    a = _abs(x)
    k, m_hi, m_lo = _erfc_dd_parts(select(a < 40.0, a, f64(40.0)), f64(0.0))
    right = scale(m_hi + m_lo, k)
    p = pow2(select(k > -60, k, i64(-60)))  # only a < 6 uses it: there k >= -58
    l_hi, l_lo = two_sum(f64(2.0), -(m_hi * p))
    left = l_hi + (l_lo - m_lo * p)
    out = select(x < 0.0, select(a < 6.0, left, f64(2.0)), right)
    return select(isnan(x), _quiet(x), out)


def gelu(x: Value) -> Value:
    """x * Phi(x) = x * erfc(-x/sqrt(2)) / 2 for float64 (PyTorch's exact gelu).

    Precision: ≤ 1 ulp of the correctly rounded result.
    Special values: gelu(-inf) = -0.0 and gelu(+inf) = +inf (the limits, as float32 ``gelu``),
    gelu(±0) = ±0, -0.0 below -38.6; a NaN comes back quieted.
    """
    a = _abs(x)
    xs = select(a < 64.0, x, f64(1.0))  # beyond 64 Phi is 0 or 1 to 2^-2000
    u_hi, u_lo = mul_dd_const(_abs(xs), f64(0.0), SQRT_HALF[0], SQRT_HALF[1])
    k, m_hi, m_lo = _erfc_dd_parts(u_hi, u_lo)  # erfc(|x|/sqrt(2)) = 2 Phi(-|x|)
    # x < 0: x * erfc(u) / 2, scaled once at the end
    t_hi, t_lo = two_prod(xs, m_hi)
    left = scale((t_hi + (t_lo + xs * m_lo)) * 0.5, k)
    # x >= 0: x * (1 - erfc(u) / 2)
    p = pow2(select(k > -60, k, i64(-60))) * 0.5  # below 2^-60, 1 - erfc/2 rounds to 1 anyway
    f_hi, f_lo = two_sum(f64(1.0), -(m_hi * p))
    f_lo = f_lo - m_lo * p
    r_hi, r_lo = two_prod(xs, f_hi)
    right = r_hi + (r_lo + xs * f_lo)
    out = select(x < 0.0, left, right)
    out = select(a < 64.0, out, select(x < 0.0, -f64(0.0), x))
    out = select(eq(x, 0.0), x, out)
    return select(isnan(x), _quiet(x), out)
