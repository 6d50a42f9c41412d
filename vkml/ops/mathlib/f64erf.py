"""float64 erf, erfc and gelu, within 1 ulp: the float64 twins of ``special.erf``, ``erfs.erfc``
and ``special.gelu``.

|x| < 1: erf(x) = 2/sqrt(pi) * x * (1 - x^2/3 + x^4 P(x^2)), the Taylor series (truncated below
2^-64), its first two terms in double-double. |x| >= 1: erfc(x) = e^(-x^2) * g(x) with
g(x) = erfc(x) e^(x^2), a smooth, slowly varying function: on each of 15 intervals [1.25^i,
1.25^(i+1)) / 2 from 0.5 on (up to 34.7, past erfc's underflow at 27.3) g is its Taylor polynomial at the
interval's centre, degree 20, whose coefficients come from the exact recurrence
g' = 2x g - 2/sqrt(pi), g^(k+1) = 2x g^(k) + 2k g^(k-1) evaluated with mpmath at 300 bits
(truncation below 2^-64 relative), the constant term a double-double; e^(-x^2) is ``f64math``'s
exp of the double-double -x^2. erf = 1 - erfc from 1 on, erfc = 1 - erf below 0.5 (where erf <= 0.53,
so the difference loses no digits; 1 - erf up to 1 would amplify erf's rounding up to 4.7 times),
erfc(-x) = 2 - erfc(x),
gelu(x) = x * erfc(-x/sqrt(2)) / 2 with x/sqrt(2) a double-double.
"""

from __future__ import annotations

import math

from ...ir.builder import eq, isnan, select
from ...ir.core import Value
from .f64 import _quiet
from .f64dd import div_dd, f64, fast_two_sum, horner, i64, mul_dd, mul_dd_const, pow2, scale, two_prod, two_sum
from .f64math import _abs, _with_sign_of, exp_parts, reduce_exp

TWO_OVER_SQRT_PI = (float.fromhex("0x1.20dd750429b6dp+0"), float.fromhex("0x1.1ae3a914fed80p-56"))
SQRT_HALF = (float.fromhex("0x1.6a09e667f3bcdp-1"), float.fromhex("-0x1.bdd3413b26456p-55"))
THIRD = (float.fromhex("0x1.5555555555555p-2"), float.fromhex("0x1.5555555555555p-56"))
# erf(x) / (2/sqrt(pi) x) = 1 - z/3 + z^2 * sum (-1)^n z^(n-2) / (n! (2n+1)), n >= 2, z = x^2 <= 1
ERF_T = [(-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(2, 22)]
# Interval i is [0.5*1.25^i, 0.5*1.25^(i+1)), up to 34.7; its row: (centre, g(centre) as a dd, g's Taylor coefficients 1..20)
G_TAYLOR = [
    tuple(float.fromhex(v) for v in row)
    for row in (
        (
            "0x1.2000000000000p-1",
            "0x1.2b84f076e14fbp-1",
            "0x1.b8bd1accf8123p-55",
            "-0x1.e18ab7052be7fp-2",
            "0x1.482bd9fad9ed0p-2",
            "-0x1.8bed65e01718dp-3",
            "0x1.b1a22aa7a6dc0p-4",
            "-0x1.b65943018044bp-5",
            "0x1.9dcc15144e60fp-6",
            "-0x1.6ff6b38454d3fp-7",
            "0x1.364eb29716855p-8",
            "-0x1.f301024a60e0dp-10",
            "0x1.80374a0767d5ep-11",
            "-0x1.1c5283fa6594dp-12",
            "0x1.95aac68bf9b01p-14",
            "-0x1.17b93b25cce29p-15",
            "0x1.75b5590aadc99p-17",
            "-0x1.e4a18e22c537ep-19",
            "0x1.318ea10dca0dbp-20",
            "-0x1.773d9760d6f4cp-22",
            "0x1.c1670dce86ccfp-24",
            "-0x1.06c5fa7917942p-25",
            "0x1.2c65e5e39355dp-27",
        ),
        (
            "0x1.6800000000000p-1",
            "0x1.0ca677c6d71ccp-1",
            "0x1.c8b00d7f1f86dp-55",
            "-0x1.8fe1a33169da5p-2",
            "0x1.002248ceefcc1p-2",
            "-0x1.250cb55536fe8p-3",
            "0x1.3237a21df4ed2p-4",
            "-0x1.28a1d6f117d1cp-5",
            "0x1.0d3e50bc43673p-6",
            "-0x1.cda8fcb45bb5bp-8",
            "0x1.782f38a11e909p-9",
            "-0x1.24ce90b51469bp-10",
            "0x1.b530f602556bdp-12",
            "-0x1.3a1e7c4f84f11p-13",
            "0x1.b3ada86880e97p-15",
            "-0x1.2459cbf2a544fp-16",
            "0x1.7c74ac3ccc5a8p-18",
            "-0x1.e102bf4cb6134p-20",
            "0x1.27e7309c50592p-21",
            "-0x1.62ce8f41a75e1p-23",
            "0x1.9f2c3b6dd1a66p-25",
            "-0x1.daa80ed67bd08p-27",
            "0x1.0963c0a817e89p-28",
        ),
        (
            "0x1.c200000000000p-1",
            "0x1.da31d4feac8d9p-2",
            "0x1.2083bcfca4995p-56",
            "-0x1.41ea3ba8fb8a6p-2",
            "0x1.7e85ed1e4ef1ep-3",
            "-0x1.9a2bad386f984p-4",
            "0x1.948b76fe03cefp-5",
            "-0x1.73d3d2494b12fp-6",
            "0x1.418681711316ep-7",
            "-0x1.0777199a67119p-8",
            "0x1.9b7d556171974p-10",
            "-0x1.33a4ff46a6dc9p-11",
            "0x1.ba121eb7d5388p-13",
            "-0x1.32323466ec044p-14",
            "0x1.9a04139623564p-16",
            "-0x1.09f99c6dc3632p-17",
            "0x1.4f02273fe365ep-19",
            "-0x1.9a60d3d98c199p-21",
            "0x1.e9acc166acba9p-23",
            "-0x1.1cf90d82936ebp-24",
            "0x1.43f2f0db5f0eap-26",
            "-0x1.681265332813bp-28",
            "0x1.87bb09cb0266dp-30",
        ),
        (
            "0x1.1940000000000p+0",
            "0x1.9bb6f31905fe1p-2",
            "0x1.921ced843adf6p-57",
            "-0x1.f5a0add456610p-3",
            "0x1.10531f3884161p-3",
            "-0x1.0dec7a5f545a5p-4",
            "0x1.f03461ff997ffp-6",
            "-0x1.aba37d75ce6acp-7",
            "0x1.5c64eef103fb6p-8",
            "-0x1.0e02e8ce78b0ep-9",
            "0x1.90252b9d31de7p-11",
            "-0x1.1ca305cdf8c46p-12",
            "0x1.861030e17b58ep-14",
            "-0x1.022f908d26a81p-15",
            "0x1.4afbc02297fbcp-17",
            "-0x1.9bc32f9cad044p-19",
            "0x1.f2087721ff581p-21",
            "-0x1.254e1e48b1ad3p-22",
            "0x1.50ea6dbf50be5p-24",
            "-0x1.79eac97119ffep-26",
            "0x1.9e6e741455d95p-28",
            "-0x1.bcc88c19b62e8p-30",
            "0x1.d3a0fe8f3ccc4p-32",
        ),
        (
            "0x1.5f90000000000p+0",
            "0x1.5fdb99956ca2bp-2",
            "-0x1.dd132ea6e4798p-56",
            "-0x1.7a1b9bb83db60p-3",
            "0x1.70ed52434a0c1p-4",
            "-0x1.4cc312dfeeba8p-5",
            "0x1.18dfffeaedd02p-6",
            "-0x1.bfae72fae1fe1p-8",
            "0x1.5322a9435ed97p-9",
            "-0x1.eb01d74cc80c4p-11",
            "0x1.551f76e90cf62p-12",
            "-0x1.c87deb6f3ca6ep-14",
            "0x1.2709c600e6d8bp-15",
            "-0x1.7151138e71a96p-17",
            "0x1.c0a6206588f25p-19",
            "-0x1.08f76f7edf9edp-20",
            "0x1.30cff8fe83626p-22",
            "-0x1.5602bd1f2f8fbp-24",
            "0x1.76c8e090f4e46p-26",
            "-0x1.91941a294252cp-28",
            "0x1.a52e06b4af4ccp-30",
            "-0x1.b0ce0ef9108ccp-32",
            "0x1.b4240cf454904p-34",
        ),
        (
            "0x1.b774000000000p+0",
            "0x1.285a94906e840p-2",
            "0x1.ad7ccf4036ba6p-57",
            "-0x1.140530e551dcbp-3",
            "0x1.db8cbfb5d6f5ep-5",
            "-0x1.7fa9396771e7ap-6",
            "0x1.2480754d46b7fp-7",
            "-0x1.a855cbe9f4096p-9",
            "0x1.26644919aceb5p-10",
            "-0x1.885baee44a2ebp-12",
            "0x1.f80a21f1f905bp-14",
            "-0x1.38f9513a97941p-15",
            "0x1.78a8ba1954731p-17",
            "-0x1.b83b183d88036p-19",
            "0x1.f49eba088bc89p-21",
            "-0x1.1566913cab390p-22",
            "0x1.2c075a96ff1e3p-24",
            "-0x1.3d1a82cf4d530p-26",
            "0x1.47e2a2039c783p-28",
            "-0x1.4c07732939925p-30",
            "0x1.4996cd6bcee06p-32",
            "-0x1.40fc25ea14ea7p-34",
            "0x1.32f08c2a416d9p-36",
        ),
        (
            "0x1.12a8800000000p+1",
            "0x1.ece4e26de7c2ep-3",
            "-0x1.82164a0363a78p-58",
            "-0x1.874c183d40403p-4",
            "0x1.244f8b9992b58p-5",
            "-0x1.9e4da27d4e19fp-7",
            "0x1.183e9a5f28b2bp-8",
            "-0x1.6ba08cfc4fb46p-10",
            "0x1.c64abc73eab51p-12",
            "-0x1.121dd25f722c8p-13",
            "0x1.4064c951955dap-15",
            "-0x1.6b88afe1e40e3p-17",
            "0x1.913664ac33ef0p-19",
            "-0x1.af701cabf0438p-21",
            "0x1.c4b917275762dp-23",
            "-0x1.d03165d3ba968p-25",
            "0x1.d19fbea2e83bbp-27",
            "-0x1.c969f76f0f58cp-29",
            "0x1.b87f00319570cp-31",
            "-0x1.a036a6a6fc569p-33",
            "0x1.822c0c7c38ca8p-35",
            "-0x1.60178f1d4d952p-37",
            "0x1.3bac1b6de7ce4p-39",
        ),
        (
            "0x1.5752a00000000p+1",
            "0x1.9596e69dfe7bbp-3",
            "-0x1.1b8b1351cc739p-59",
            "-0x1.0e5699b3a5bd4p-4",
            "0x1.584cefd77e7dfp-6",
            "-0x1.a4faa12e2b0ddp-8",
            "0x1.f018c9576f16dp-10",
            "-0x1.1a9fe426ba463p-11",
            "0x1.382e3ccc16b26p-13",
            "-0x1.4f0b98f606538p-15",
            "0x1.5e0f991099064p-17",
            "-0x1.64a971e00f5ccp-19",
            "0x1.62e1aefc2da3bp-21",
            "-0x1.594b97931c444p-23",
            "0x1.48ea2fd09b66ap-25",
            "-0x1.330dd93b1f873p-27",
            "0x1.192facd570f93p-29",
            "-0x1.f99e01e03c5fcp-32",
            "0x1.bea8ce32f8010p-34",
            "-0x1.83f82b863d6c2p-36",
            "0x1.4b90c8fc78742p-38",
            "-0x1.16f7dcc2cff98p-40",
            "0x1.ce68b24d46340p-43",
        ),
        (
            "0x1.ad27480000000p+1",
            "0x1.4afe692750a69p-3",
            "-0x1.6d96c0619c8f8p-59",
            "-0x1.6dbc9f7deb62dp-5",
            "0x1.86fce37a2671dp-7",
            "-0x1.957d26e1eeb92p-9",
            "0x1.98e352be41f1dp-11",
            "-0x1.91aec7eb2efb5p-13",
            "0x1.8112fa4f6d9b4p-15",
            "-0x1.68c3d2b1cf833p-17",
            "0x1.4abce27d6c3e1p-19",
            "-0x1.290b51dc1c22cp-21",
            "0x1.05a05a73bc72bp-23",
            "-0x1.c45f5a8fafb7ap-26",
            "0x1.80359c6363f51p-28",
            "-0x1.40d11fc88237fp-30",
            "0x1.078d32c5d83dep-32",
            "-0x1.aa48f0bdec09dp-35",
            "0x1.539726a7ebc6ap-37",
            "-0x1.0a9f820a6530ap-39",
            "0x1.9cd57e6871762p-42",
            "-0x1.3b4e3ee6f380ap-44",
            "0x1.db5a5fb06ffc5p-47",
        ),
        (
            "0x1.0c388d0000000p+2",
            "0x1.0c71f7cfea0dcp-3",
            "0x1.d009809bbbd20p-57",
            "-0x1.e6b633616deb6p-6",
            "0x1.af1ade83d6c6bp-8",
            "-0x1.759e4bdf51e88p-10",
            "0x1.3d34f56a231b2p-12",
            "-0x1.081e9dcf11b92p-14",
            "0x1.afc6006a6e445p-17",
            "-0x1.5ac29bb054927p-19",
            "0x1.11d6af7a5da1ap-21",
            "-0x1.a997f32eeb9ebp-24",
            "0x1.45a74f1f1e0f6p-26",
            "-0x1.eb050245275c2p-29",
            "0x1.6ced1634396efp-31",
            "-0x1.0b807b7da3e42p-33",
            "0x1.82fdab5b0ac95p-36",
            "-0x1.14596cb4d7e23p-38",
            "0x1.85cc0722c166bp-41",
            "-0x1.0f9c84edddae0p-43",
            "0x1.761d0eb6f211ep-46",
            "-0x1.fd792f4d6e8c5p-49",
            "0x1.571787aac711ap-51",
        ),
        (
            "0x1.4f46b04000000p+2",
            "0x1.b17e133d9918cp-4",
            "-0x1.99b2117a1bf20p-59",
            "-0x1.3fe77dcd0fe7bp-6",
            "0x1.d0ba02575b379p-9",
            "-0x1.4c77fd0bcf6c9p-11",
            "0x1.d4d308019965ap-14",
            "-0x1.45f58dad1c40fp-16",
            "0x1.bf3215e03884dp-19",
            "-0x1.2ece178747a96p-21",
            "0x1.94f64212f86d9p-24",
            "-0x1.0b87819955868p-26",
            "0x1.5d5a018bc3e2ap-29",
            "-0x1.c30a461239cdbp-32",
            "0x1.1ff8102731133p-34",
            "-0x1.6bca8dffeffc3p-37",
            "0x1.c6d082eb1f5cap-40",
            "-0x1.19705abe988b1p-42",
            "0x1.58e316bd2c9cep-45",
            "-0x1.a297c0b8c2292p-48",
            "0x1.f74e421fa43ecp-51",
            "-0x1.2bd2baf333badp-53",
            "0x1.6208ab0165e3cp-56",
        ),
        (
            "0x1.a3185c5000000p+2",
            "0x1.5cebfe2402ed2p-4",
            "-0x1.6ef77c4a13dc5p-58",
            "-0x1.a0dd486d8bbb7p-7",
            "0x1.ecc47584966b2p-10",
            "-0x1.204159a50cf60p-12",
            "0x1.4de11b97a17fbp-15",
            "-0x1.7ef97b414e493p-18",
            "0x1.b324b4efcfd85p-21",
            "-0x1.e9dfc948df2e9p-24",
            "0x1.11461733e5359p-26",
            "-0x1.2e3956ba1be76p-29",
            "0x1.4b63ad7334922p-32",
            "-0x1.685744347728fp-35",
            "0x1.84a140cb9cda0p-38",
            "-0x1.9fcceccfc4186p-41",
            "0x1.b96703e1c5297p-44",
            "-0x1.d10106295437fp-47",
            "0x1.e6346b9e8c4a4p-50",
            "-0x1.f8a5965f3818ep-53",
            "0x1.040332e373a5ep-55",
            "-0x1.0a0c287f39f22p-58",
            "0x1.0e56faf12a28bp-61",
        ),
        (
            "0x1.05ef39b200000p+3",
            "0x1.184255a37bf9cp-4",
            "0x1.a9fb7dcad0da7p-59",
            "-0x1.0df74e72bfbe4p-7",
            "0x1.023afb9ebbec0p-10",
            "-0x1.ea9ee21b4ea4bp-14",
            "0x1.cef03a00cb4b2p-17",
            "-0x1.b1efa2e5ab478p-20",
            "0x1.941e089f9cfdap-23",
            "-0x1.75f4a45f508f6p-26",
            "0x1.57e295d7e2bb8p-29",
            "-0x1.3a4b16357f20ap-32",
            "0x1.1d84436b004fbp-35",
            "-0x1.01d67be2d0be7p-38",
            "0x1.cef87aec006a3p-42",
            "-0x1.9d44ed93f22a3p-45",
            "0x1.6ed26faaa9d19p-48",
            "-0x1.43c95a6d1e02dp-51",
            "0x1.1c3ca42839b42p-54",
            "-0x1.f05914eca44e6p-58",
            "0x1.af12bfa889b70p-61",
            "-0x1.746cbbbc7838cp-64",
            "0x1.4018c52c8508ep-67",
        ),
        (
            "0x1.476b081e80000p+3",
            "0x1.c195e506e4ebep-5",
            "0x1.908b67b4b301fp-60",
            "-0x1.5c3d49c5cf520p-8",
            "0x1.0c80c87ef4409p-11",
            "-0x1.9c2d1bf18d359p-15",
            "0x1.3af3cbe55d898p-18",
            "-0x1.df341f3de3914p-22",
            "0x1.6af8d33dd1e47p-25",
            "-0x1.11c09078e2551p-28",
            "0x1.9b2cd10c89c50p-32",
            "-0x1.337f9e7fd65e4p-35",
            "0x1.ca06265662c36p-39",
            "-0x1.53b8dc4c293edp-42",
            "0x1.f5ea533b27303p-46",
            "-0x1.714a7074b809cp-49",
            "0x1.0ea3226228993p-52",
            "-0x1.8b2095a43e295p-56",
            "0x1.1f5393c710b53p-59",
            "-0x1.a046c1419ebd4p-63",
            "0x1.2c68c69368ec9p-66",
            "-0x1.aff6db6f566b7p-70",
            "0x1.356a6caaedcd7p-73",
        ),
        (
            "0x1.9945ca2620000p+3",
            "0x1.68468b8a3083ep-5",
            "0x1.24dca839c2c57p-60",
            "-0x1.bffd979e0f47ep-9",
            "0x1.15b3af8aef371p-12",
            "-0x1.574525e0eac8dp-16",
            "0x1.a71437a8a90aep-20",
            "-0x1.03f73af0ec63bp-23",
            "0x1.3e8f432d74adfp-27",
            "-0x1.853f5784dc323p-31",
            "0x1.da46c2e374539p-35",
            "-0x1.20213a2f5ed7ep-38",
            "0x1.5d1cd8656acc6p-42",
            "-0x1.a5d6048318848p-46",
            "0x1.fc50510a2b609p-50",
            "-0x1.316db64f05c4dp-53",
            "0x1.6e0e12b1d31acp-57",
            "-0x1.b58b0f6b3fcdbp-61",
            "0x1.04cd8e2a0eeb2p-64",
            "-0x1.36176892143d7p-68",
            "0x1.6fbb64d3dab6ep-72",
            "-0x1.b2f4e74f3e115p-76",
            "0x1.0092d0d7f1121p-79",
        ),
        (
            "0x1.ff973cafa8000p+3",
            "0x1.2088ac2f7c5e0p-5",
            "0x1.0096dc8e15702p-61",
            "-0x1.1fa551f7091c2p-9",
            "0x1.1e3587b36c819p-13",
            "-0x1.1c3c3651313cdp-17",
            "0x1.19bd05665ac07p-21",
            "-0x1.16bc50a78444ep-25",
            "0x1.133f1be4da626p-29",
            "-0x1.0f4b05bb0bed8p-33",
            "0x1.0ae639275ef38p-37",
            "-0x1.06175e305a4b5p-41",
            "0x1.00e589d5e8ee3p-45",
            "-0x1.f6b05af9076a3p-50",
            "0x1.eaee0c0d9b02fp-54",
            "-0x1.de9415a05bcdep-58",
            "0x1.d1b2b972c5e02p-62",
            "-0x1.c45a6aeb941c0p-66",
            "0x1.b69bae8aa6e69p-70",
            "-0x1.a886fa8789503p-74",
            "0x1.9a2c98e46622bp-78",
            "-0x1.8b9c8b3714b84p-82",
            "0x1.7ce6706135471p-86",
        ),
        (
            "0x1.3fbe85edc9000p+4",
            "0x1.cdfa137d15cb0p-6",
            "-0x1.5fbe5535144bcp-61",
            "-0x1.70f4e9ee24472p-10",
            "0x1.264d31c5e1dfap-14",
            "-0x1.d4ecdd8a130edp-19",
            "0x1.751f2ed57aedcp-23",
            "-0x1.28872235b5d18p-27",
            "0x1.d6bd2faf340cfp-32",
            "-0x1.753217317de28p-36",
            "0x1.27819769c0ed3p-40",
            "-0x1.d36a1b5897f91p-45",
            "0x1.71384b1b424c6p-49",
            "-0x1.234df765d5f60p-53",
            "0x1.cb1d2fe3394a5p-58",
            "-0x1.695d9485008e7p-62",
            "0x1.1c175491e89e0p-66",
            "-0x1.be2784e98caebp-71",
            "0x1.5debf8e694eeap-75",
            "-0x1.121fb674a4273p-79",
            "0x1.acfccc9afc210p-84",
            "-0x1.4f475ba1ada53p-88",
            "0x1.05bc4e4d2f245p-92",
        ),
        (
            "0x1.8fae27693b400p+4",
            "0x1.71bf4c0fe826dp-6",
            "0x1.fb0bf8bb389a5p-62",
            "-0x1.d8e626d0a4c53p-11",
            "0x1.2e2c64c9eb4abp-15",
            "-0x1.81dc0b45bd52ap-20",
            "0x1.ec550b58d485ep-25",
            "-0x1.39d81acafd4adp-29",
            "0x1.8fd04234f1f6dp-34",
            "-0x1.fcee74383f987p-39",
            "0x1.43a9366cd1dccp-43",
            "-0x1.9b59945e31b89p-48",
            "0x1.0531ada654e3dp-52",
            "-0x1.4b70ff44c1422p-57",
            "0x1.a441342e4c0e8p-62",
            "-0x1.0a3a0791c6d2fp-66",
            "0x1.510ad831013f1p-71",
            "-0x1.aa5d948aef69ap-76",
            "0x1.0d7913df8710fp-80",
            "-0x1.545d5caa18ed8p-85",
            "0x1.ad93a8a0c60f0p-90",
            "-0x1.0ee0f2d57ef01p-94",
            "0x1.555b1c453afa7p-99",
        ),
        (
            "0x1.f399b1438a100p+4",
            "0x1.27e2034d6817bp-6",
            "0x1.67a9a1ee7626fp-61",
            "-0x1.2eea8c910a118p-11",
            "0x1.35f55c01dfb4bp-16",
            "-0x1.3d00b2b14c231p-21",
            "0x1.440ac83e58e93p-26",
            "-0x1.4b11cb8e23eacp-31",
            "0x1.5213e38d46fd2p-36",
            "-0x1.590f2ff9ceab6p-41",
            "0x1.6001ca354c47ep-46",
            "-0x1.66e9c61e86627p-51",
            "0x1.6dc532f2420edp-56",
            "-0x1.74921c32971b6p-61",
            "0x1.7b4e8a943982bp-66",
            "-0x1.81f884f11b053p-71",
            "0x1.888e113fc1021p-76",
            "-0x1.8f0d358ea45ddp-81",
            "0x1.9573f902eb94ep-86",
            "-0x1.9bc064d9ca05fp-91",
            "0x1.a1f0856bcb170p-96",
            "-0x1.a8026b314c190p-101",
            "0x1.adf42bc764c6cp-106",
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


def erfcx_large(u_hi: Value, u_lo: Value) -> tuple[Value, Value]:
    """erfcx(u) = e^(u^2) erfc(u), the g of ``erfc_large``, as a dd for a dd u in [0.5, 28]."""
    row = G_TAYLOR[0]
    centre, c_hi, c_lo = f64(row[0]), f64(row[1]), f64(row[2])
    coeffs = [f64(c) for c in row[3:]]
    for i in range(1, len(G_TAYLOR)):
        inside = u_hi >= 0.5 * 1.25**i  # exact: 5^i / 2^(2i+1) needs 2.33i bits
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
    return fast_two_sum(c_hi, h * acc + c_lo)


def erfc_large(u_hi: Value, u_lo: Value) -> tuple[Value, Value, Value]:
    """erfc(u) = 2^k (m_hi + m_lo) for a dd u in [0.5, 28]: (int64 k, m_hi, m_lo), m in [0.05, 2]."""
    g_hi, g_lo = erfcx_large(u_hi, u_lo)
    s_hi, s_lo = two_prod(u_hi, u_hi)
    s_lo = s_lo + 2.0 * u_hi * u_lo  # u^2
    k, r_hi, r_lo = reduce_exp(-s_hi)
    r_hi, r_lo = fast_two_sum(r_hi, r_lo - s_lo)
    e_hi, e_lo = exp_parts(r_hi, r_lo)
    m_hi, m_lo = mul_dd(e_hi, e_lo, g_hi, g_lo)
    return k, m_hi, m_lo


_SMALL = 0.5  # below it erfc = 1 - erf (erf <= 0.53: no digits lost); from it on e^(-u^2) g(u)


def _clamp_large(a: Value) -> Value:
    return select(a < _SMALL, f64(_SMALL), select(a < _G_LIMIT, a, f64(_G_LIMIT)))


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
    """erfc(u) = 2^k (m_hi + m_lo) for a dd u >= 0 (finite): below 0.5 as 1 - erf(u) with k = 0."""
    small = u_hi < _SMALL
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


# PyTorch's double constants: M_SQRT2 * M_2_SQRTPI * 0.5 (sqrt(2/pi) rounded as it forms it) and 0.044715
GELU_BETA = 1.41421356237309504880 * 1.12837916709551257390 * 0.5
GELU_KAPPA = 0.044715


def gelu_tanh(x: Value) -> Value:
    """GELU's tanh approximation for float64, 0.5 x (1 + tanh(b (x + k x^3))) with PyTorch's
    double constants b and k, evaluated as x * sigmoid(v), v = 2 b (x + k x^3) a double-double.

    Precision: ≤ 1 ulp of the correctly rounded value of PyTorch's formula, relative accuracy
    included in the left tail where 1 + tanh(...) cancels (PyTorch's own gives -0.0 below about -7).
    Special values: gelu_tanh(±0) = ±0, gelu_tanh(+inf) = +inf, gelu_tanh(-inf) = -0.0 (the limit,
    as float32 ``gelu_tanh``), -0.0 below about -22; a NaN comes back quieted.
    """
    a = _abs(x)
    xs = select(a < 1e30, x, f64(1.0))
    s_hi, s_lo = two_prod(xs, xs)
    c_hi, c_lo = mul_dd(s_hi, s_lo, xs, f64(0.0))  # x^3
    k_hi, k_lo = mul_dd_const(c_hi, c_lo, GELU_KAPPA, 0.0)
    w_hi, w_lo = two_sum(xs, k_hi)
    w_hi, w_lo = fast_two_sum(w_hi, w_lo + k_lo)
    v_hi, v_lo = mul_dd_const(w_hi, w_lo, 2.0 * GELU_BETA, 0.0)  # 2b exact
    # e^-|v| = 2^k (hi + lo), |v| clamped to 760 (the result underflows well before)
    negative = v_hi < 0.0
    m_hi = -_abs(v_hi)
    m_lo = select(negative, v_lo, -v_lo)
    clamped = m_hi < -760.0
    m_hi, m_lo = select(clamped, f64(-760.0), m_hi), select(clamped, f64(0.0), m_lo)
    k, r_hi, r_lo = reduce_exp(m_hi)
    r_hi, r_lo = fast_two_sum(r_hi, r_lo + m_lo)
    hi, lo = exp_parts(r_hi, r_lo)
    p = pow2(select(k > -58, k, i64(-58)))
    e_hi, e_lo = hi * p, lo * p
    d_hi, d_lo = two_sum(f64(1.0), e_hi)
    n_hi, n_lo = select(negative, e_hi, f64(1.0)), select(negative, e_lo, f64(0.0))
    q_hi, q_lo = div_dd(n_hi, n_lo, d_hi, d_lo + e_lo)
    t_hi, t_lo = two_prod(xs, q_hi)
    near = t_hi + (t_lo + xs * q_lo)
    # v below -40: sigmoid(v) = e^v to 2^-57, x e^v scaled once (x*hi is at most 2^6 in size here)
    u_hi, u_lo = two_prod(xs, hi)
    tail = scale(u_hi + (u_lo + xs * lo), k)
    out = select(m_hi < -40.0, select(negative, tail, near), near)
    out = select(clamped & negative, -f64(0.0), out)
    out = select(a < 1e30, out, select(x > 0.0, x, -f64(0.0)))
    out = select(eq(x, 0.0), x, out)
    return select(isnan(x), _quiet(x), out)
