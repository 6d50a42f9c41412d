"""The verifier: one test per rule, each checking that the message names the offending statement.

Most broken kernels are written as text: the parser builds whatever the text says and leaves
the judging to the verifier. Breakage the text cannot express is made by editing built IR.
"""

from __future__ import annotations

import pytest

from vkml.errors import IRError
from vkml.ir import BufferDecl, Instr, KernelBuilder, SharedDecl, Value, parse, verify
from vkml.ir import types as T
from vkml.ir.builder import barrier, const, global_id, if_, local_id, loop, range_, workgroup_id


def kernel_text(body: str, decls: str = "", local_size: str = "64, 1, 1") -> str:
    """A kernel around ``body`` with buffers r (read), w (write), rw (readwrite), shared s and param %n."""
    header = f"kernel k local_size({local_size}) {{\n"
    header += "  buffer r: f32 read\n  buffer w: f32 write\n  buffer rw: f32 readwrite\n"
    header += "  shared s: f32[64]\n  param %n: u32\n" + decls
    return header + body + "}\n"


def rejects(text_or_kernel, *fragments: str) -> str:
    kernel = parse(text_or_kernel) if isinstance(text_or_kernel, str) else text_or_kernel
    with pytest.raises(IRError) as info:
        verify(kernel)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


PRELUDE = "  %0 = global_id 0 : u32\n  %1 = load r[%0] : f32\n"


# ---------------------------------------------------------------- well-formed kernels pass


def test_well_formed_kernels_pass():
    body = PRELUDE + (
        "  %2 = workgroup_id 0 : u32\n"
        "  %3 = lt %2, %n : bool\n"
        "  if %3 {\n"
        "    barrier\n"  # uniform: workgroup_id and a param
        "  }\n"
        "  %4 = const 0 : u32\n"
        "  %5 = const 1 : u32\n"
        "  %6 = load r[%4] : f32\n"  # uniform: read-only buffer, uniform index
        "  %10 = loop %7 = %4 to %n step %5 carry(%8 = %6) -> f32 {\n"
        "    %9 = add %8, %6 : f32\n"
        "    barrier\n"
        "    yield %9\n"
        "  }\n"
        "  %11 = lt %10, %6 : bool\n"
        "  if %11 {\n"
        "    barrier\n"  # uniform: the loop carried only uniform values
        "  }\n"
        "  store w[%0], %10\n"
    )
    kernel = parse(kernel_text(body))
    assert verify(kernel) is kernel


def test_built_kernels_pass():
    kb = KernelBuilder("reduce", local_size=(64, 1, 1))
    x = kb.buffer("x", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    n = kb.param("n", T.uint32)
    partial = kb.shared("partial", T.float32, 64)
    with kb:
        lid = local_id(0)
        (total,) = loop(lid, n, 64, (const(0.0, T.float32),), lambda i, acc: acc + x[i])
        partial[lid] = total
        barrier()
        with range_(const(0, T.int32), 6) as level:
            barrier()
            with if_(level > 2):
                barrier()
        with if_(lid < 1):
            out[workgroup_id(0)] = partial[0]
    kernel = kb.finish()
    assert verify(kernel) is kernel


# ---------------------------------------------------------------- types


def test_operand_types_must_agree():
    body = "  %0 = const 1 : i32\n  %1 = const 2.0 : f32\n  %2 = add %1, %0 : f32\n"
    rejects(kernel_text(body), "operand types differ (f32, i32)", ": %2 = add %1, %0 : f32")


def test_operand_type_must_be_allowed():
    body = "  %0 = const 1.0 : f32\n  %1 = irem %0, %0 : f32\n"
    rejects(kernel_text(body), "irem: operand type f32 not allowed", "%1 = irem %0, %0 : f32")


def test_result_type_must_match_the_instruction():
    body = "  %0 = const 1.0 : f32\n  %1 = lt %0, %0 : f32\n"
    rejects(kernel_text(body), "lt gives bool but its result is typed f32", "%1 = lt %0, %0 : f32")


def test_operand_count_must_match():
    body = "  %0 = const 1.0 : f32\n  %1 = add %0 : f32\n"
    rejects(kernel_text(body), "add takes 2 operand(s), got 1", "%1 = add %0 : f32")


def test_conversion_must_be_exact():
    body = "  %0 = const 1.0 : f32\n  %1 = convert %0 : f16\n"
    rejects(kernel_text(body), "convert f32 -> f16 is not an exact IR conversion", "%1 = convert %0 : f16")


def test_conversion_target_must_be_the_result_type():
    body = "  %0 = const 1 : u32\n  %1 = bitcast %0, i32 : f32\n"
    rejects(kernel_text(body), "bitcast gives i32 but its result is typed f32", "%1 = bitcast %0, i32 : f32")


def test_index_axis_must_be_0_1_or_2():
    rejects(kernel_text("  %0 = local_id 3 : u32\n"), "local_id attrs are (3,)", ": %0 = local_id 3 : u32")


def test_unknown_instruction():
    kernel = parse(kernel_text("  %0 = const 1.0 : f32\n  %1 = neg %0 : f32\n"))
    kernel.body.body[1].op = "sqrt"
    rejects(kernel, "unknown instruction 'sqrt'", "%1 = sqrt %0 : f32")


def test_const_attr_must_be_a_numpy_scalar():
    kernel = parse(kernel_text("  %0 = const 1.0 : f32\n"))
    kernel.body.body[0].attrs = (1.0,)
    rejects(kernel, "const attrs are (1.0,)", "%0 = const 1.0 : f32")


# ---------------------------------------------------------------- memory


def test_load_from_a_missing_buffer():
    rejects(kernel_text(PRELUDE + "  %2 = load nowhere[%0] : f32\n"), "no buffer named 'nowhere'", "load nowhere[%0]")


def test_load_from_a_write_only_buffer():
    rejects(kernel_text(PRELUDE + "  %2 = load w[%0] : f32\n"), "load from write-only buffer 'w'", "%2 = load w[%0]")


def test_store_to_a_read_only_buffer():
    rejects(kernel_text(PRELUDE + "  store r[%0], %1\n"), "store to read-only buffer 'r'", ": store r[%0], %1")


def test_index_must_be_an_integer():
    rejects(kernel_text(PRELUDE + "  store w[%1], %1\n"), "index %1 is f32, not an integer", "store w[%1], %1")


def test_stored_value_must_have_the_buffer_type():
    body = PRELUDE + "  %2 = const 1 : i32\n  store rw[%0], %2\n"
    rejects(kernel_text(body), "stores i32 into 'rw', which holds f32", "store rw[%0], %2")


def test_load_result_must_have_the_buffer_type():
    rejects(kernel_text(PRELUDE + "  %2 = load rw[%0] : i32\n"), "load gives f32 but its result is typed i32")


def test_shared_array_must_exist():
    rejects(kernel_text(PRELUDE + "  shared_store t[%0], %1\n"), "no shared array named 't'", "shared_store t[%0], %1")


def test_shared_store_type_must_agree():
    body = PRELUDE + "  %2 = const 1 : i32\n  shared_store s[%0], %2\n"
    rejects(kernel_text(body), "stores i32 into 's', which holds f32", "shared_store s[%0], %2")


def test_shared_load_type_must_agree():
    rejects(kernel_text(PRELUDE + "  %2 = shared_load s[%0] : u32\n"), "shared_load gives f32 but", "shared_load s[%0]")


# ---------------------------------------------------------------- dominance


def test_use_of_a_value_from_a_sibling_branch():
    body = PRELUDE + (
        "  %2 = isnan %1 : bool\n  if %2 {\n    %3 = neg %1 : f32\n  } else {\n    store w[%0], %3\n  }\n"
    )
    rejects(kernel_text(body), "%3 is used outside the block that defines it", ": store w[%0], %3")


def test_use_of_a_loop_value_after_the_loop():
    body = PRELUDE + (
        "  %2 = const 0 : u32\n  %3 = const 1 : u32\n  loop %4 = %2 to %n step %3 {\n  }\n  store w[%4], %1\n"
    )
    rejects(kernel_text(body), "%4 is used outside the block that defines it", "store w[%4], %1")


def test_use_before_definition():
    kernel = parse(kernel_text("  %0 = const 1.0 : f32\n  %1 = neg %0 : f32\n"))
    kernel.body.body.reverse()
    rejects(kernel, "%1 is used before its definition", ": %0 = neg %1 : f32")


def test_value_defined_twice():
    kernel = parse(kernel_text("  %0 = const 1.0 : f32\n  %1 = neg %0 : f32\n"))
    first, second = kernel.body.body
    second.result = first.result
    rejects(kernel, "%0 is defined a second time", "%0 = neg %0 : f32")


def test_yield_of_an_inner_value_is_checked():
    kernel = parse(
        kernel_text(
            PRELUDE
            + "  %2 = isnan %1 : bool\n  %4 = if %2 -> f32 {\n    %3 = neg %1 : f32\n    yield %3\n  } else {\n    yield %1\n  }\n"
        )
    )
    if_stmt = kernel.body.body[-1]
    if_stmt.orelse.yields = if_stmt.then.yields
    rejects(kernel, "%3 is used outside the block that defines it", "%4 = if %2 -> f32")


# ---------------------------------------------------------------- if and loop


def test_if_condition_must_be_bool():
    rejects(kernel_text(PRELUDE + "  if %0 {\n  }\n"), "if condition %0 is u32, not bool", ": if %0")


def test_if_branches_must_yield_the_result_types():
    body = PRELUDE + "  %2 = isnan %1 : bool\n  %3 = if %2 -> f32 {\n    yield %1\n  } else {\n    yield %0\n  }\n"
    rejects(kernel_text(body), "the else branch yields (u32) but the if's results are (f32)", ": %3 = if %2 -> f32")


def test_if_branches_must_yield_as_many_values_as_results():
    body = PRELUDE + "  %2 = isnan %1 : bool\n  %3 = if %2 -> f32 {\n    yield %1\n  }\n"
    rejects(kernel_text(body), "the else branch yields () but the if's results are (f32)")


def test_loop_bounds_must_be_integers_of_one_type():
    body = PRELUDE + "  %2 = const 0 : i32\n  loop %3 = %2 to %n step %n {\n  }\n"
    rejects(kernel_text(body), "loop bounds must be integers of one type, got (i32, u32, u32)", "loop %3 = %2 to %n")
    body = PRELUDE + "  loop %3 = %1 to %1 step %1 {\n  }\n"
    rejects(kernel_text(body), "loop bounds must be integers of one type, got (f32, f32, f32)")


def test_loop_yields_must_match_the_carried_values():
    body = (
        PRELUDE + "  %2 = const 1 : u32\n  %5 = loop %3 = %2 to %n step %2 carry(%4 = %1) -> f32 {\n    yield %3\n  }\n"
    )
    rejects(kernel_text(body), "loop yields are (u32) but its initial values are (f32)", "%5 = loop %3 = %2 to %n")


def test_loop_results_must_match_the_carried_values():
    body = (
        PRELUDE
        + "  %2 = const 1 : u32\n  %5, %6 = loop %3 = %2 to %n step %2 carry(%4 = %1) -> f32, f32 {\n    yield %4\n  }\n"
    )
    rejects(kernel_text(body), "loop results are (f32, f32) but its initial values are (f32)")


def test_loop_carried_values_must_match_the_inits():
    kernel = parse(
        kernel_text(
            PRELUDE
            + "  %2 = const 1 : u32\n  %5 = loop %3 = %2 to %n step %2 carry(%4 = %1) -> f32 {\n    yield %4\n  }\n"
        )
    )
    loop_stmt = kernel.body.body[-1]
    loop_stmt.carried[0].dtype = T.int32
    rejects(kernel, "loop carried values are (i32) but its initial values are (f32)")


def test_kernel_body_must_not_yield():
    kernel = parse(kernel_text(PRELUDE))
    kernel.body.yields = (kernel.body.body[0].result,)
    rejects(kernel, "the kernel body yields values")


# ---------------------------------------------------------------- declarations


@pytest.mark.parametrize(
    "local_size, fragment",
    [("0, 1, 1", "must be three integers >= 1"), ("64, 32, 1", "has 2048 invocations, more than 1024")],
)
def test_local_size_limits(local_size, fragment):
    rejects(kernel_text("", local_size=local_size), fragment)


def test_declared_names_must_be_unique_identifiers():
    kernel = parse(kernel_text(""))
    kernel.shared = (SharedDecl("r", T.float32, 4),)
    rejects(kernel, "'r' is declared twice")
    kernel.shared = (SharedDecl("two words", T.float32, 4),)
    rejects(kernel, "shared name 'two words' is not a usable identifier")
    kernel.shared = (SharedDecl("inf", T.float32, 4),)  # the text form would read it as a literal
    rejects(kernel, "shared name 'inf' is not a usable identifier")
    kernel.shared, kernel.name = (), "my kernel"
    rejects(kernel, "kernel name 'my kernel' is not an identifier")


def test_shared_size_and_buffer_access_are_checked():
    kernel = parse(kernel_text(""))
    kernel.shared = (SharedDecl("t", T.float32, 0),)
    rejects(kernel, "shared array 't' has size 0")
    kernel.shared = ()
    kernel.buffers = (BufferDecl("b", T.float32, "append"),)
    rejects(kernel, "buffer 'b' has access 'append'")


def test_param_value_type_must_match_its_declaration():
    kernel = parse(kernel_text(""))
    kernel.params[0].value.dtype = T.int32
    rejects(kernel, "param %n is declared u32 but its value is i32")


# ---------------------------------------------------------------- barriers and uniformity


@pytest.mark.parametrize("source", ["global_id 0 : u32", "local_id 1 : u32"])
def test_barrier_under_an_invocation_dependent_if(source):
    body = f"  %0 = {source}\n  %1 = lt %0, %n : bool\n  if %1 {{\n    barrier\n  }}\n"
    rejects(
        kernel_text(body),
        f"barrier in non-uniform control flow (inside `if %1`, where %1 depends on {source.split()[0]}): barrier",
    )


def test_barrier_in_the_else_branch_and_nested_under_a_uniform_if():
    body = "  %0 = local_id 0 : u32\n  %1 = lt %0, %n : bool\n  %2 = eq %n, %n : bool\n"
    body += "  if %1 {\n  } else {\n    if %2 {\n      barrier\n    }\n  }\n"
    rejects(kernel_text(body), "(inside `if %1`, where %1 depends on local_id): barrier")


def test_barrier_in_a_loop_with_invocation_dependent_bounds():
    body = "  %0 = local_id 0 : u32\n  %1 = const 1 : u32\n  loop %2 = %0 to %n step %1 {\n    barrier\n  }\n"
    rejects(kernel_text(body), "inside `loop %2 = %0 to %n step %1`, where %0 depends on local_id): barrier")


@pytest.mark.parametrize(
    "make_condition, reason",
    [
        ("  %2 = shuffle_xor %1, 1 : f32\n  %3 = isnan %2 : bool\n", "shuffle_xor"),
        ("  %2 = shared_load s[%n] : f32\n  %3 = isnan %2 : bool\n", "shared_load"),
        ("  %2 = load rw[%n] : f32\n  %3 = isnan %2 : bool\n", "a load from writable buffer 'rw'"),
        ("  %2 = load r[%0] : f32\n  %3 = isnan %2 : bool\n", "global_id"),
    ],
)
def test_barrier_under_non_uniform_values(make_condition, reason):
    body = "  %0 = global_id 0 : u32\n  %1 = const 1.0 : f32\n" + make_condition + "  if %3 {\n    barrier\n  }\n"
    rejects(kernel_text(body), f"where %3 depends on {reason}): barrier")


def test_if_results_are_non_uniform_when_a_branch_yields_a_non_uniform_value():
    body = "  %0 = local_id 0 : u32\n  %1 = eq %n, %n : bool\n"
    body += "  %2 = if %1 -> u32 {\n    yield %0\n  } else {\n    yield %n\n  }\n"
    body += "  %3 = lt %2, %n : bool\n  if %3 {\n    barrier\n  }\n"
    rejects(kernel_text(body), "where %3 depends on local_id): barrier")


def test_loop_carried_values_turn_non_uniform_through_their_yields():
    # Only after one pass over the body does %4 (carried) pick up local_id from its yield.
    body = "  %0 = local_id 0 : u32\n  %1 = const 0 : u32\n  %2 = const 1 : u32\n"
    body += "  %7 = loop %3 = %1 to %n step %2 carry(%4 = %1) -> u32 {\n"
    body += "    %5 = lt %4, %2 : bool\n    if %5 {\n      barrier\n    }\n"
    body += "    %6 = add %4, %0 : u32\n    yield %6\n  }\n"
    rejects(kernel_text(body), "(inside `if %5`, where %5 depends on local_id): barrier")


def test_loop_results_are_non_uniform_after_a_non_uniform_loop():
    body = "  %0 = local_id 0 : u32\n  %1 = const 0 : u32\n  %2 = const 1 : u32\n"
    body += "  %5 = loop %3 = %0 to %n step %2 carry(%4 = %1) -> u32 {\n    yield %4\n  }\n"
    body += "  %6 = lt %5, %2 : bool\n  if %6 {\n    barrier\n  }\n"
    rejects(kernel_text(body), "where %6 depends on local_id): barrier")


def test_a_built_kernel_with_a_divergent_barrier_is_rejected():
    kb = KernelBuilder("divergent", local_size=(64, 1, 1))
    with kb:
        with if_(global_id(0) < 10):
            barrier()
    message = rejects(kb.finish(), "barrier in non-uniform control flow")
    assert message.endswith(": barrier")


def test_messages_use_the_kernels_value_numbers():
    kb = KernelBuilder("numbers", local_size=(64, 1, 1))
    out = kb.buffer("out", T.float32, "write")
    with kb:
        i = global_id(0)
        out[i] = const(1.0, T.float32)
    kernel = kb.finish()
    store = kernel.body.body[-1]
    kernel.body.body[-1] = Instr("store", (store.args[0], Value(T.float32)), None, store.attrs)
    rejects(kernel, "%?0 is used but never defined", ": store out[%0], %?0")
