#!/usr/bin/env python3
"""Generates the interposer's wrappers for every function of the MPI standard.

Source: the MPI Forum's machine-readable API (the `pympistandard` package on PyPI, MPI 4.0: every
procedure with its ISO C and Fortran (mpif.h / `use mpi`) bindings). Writes, under csrc/gen/:

- functions.h      one id per C function of the standard (large-count `_c` forms included) and
                   its name: the index of the per-function call statistics (count, time in call,
                   bytes) every wrapper keeps;
- wrappers_c.h     a counting and timing wrapper for each C function the hand-written wrappers
                   (csrc/shim.c and the files it includes) do not define;
- wrappers_f.h     the same for Open MPI's Fortran symbols (`mpi_x_`, calling `pmpi_x_`), for
                   the functions csrc/fortran_openmpi.h does not define.

Which functions are hand-written is read from the hand-written sources themselves (their
definitions), so the two sets cannot overlap; which the installed library has is decided when the
interposer is compiled (build.rs scans that library's mpi.h: CPMPI_HAVE_<name>). A function whose
name the library's mpi.h defines as a macro (MPICH's handle conversions) gets no wrapper.

Usage: wrappers.py [--check]   (--check: compare with the files in the repository, exit 1 if they
differ; crates/pmpi/tests/generated.rs runs it)
"""

import re
import sys
from pathlib import Path

import pympistandard as std

HERE = Path(__file__).resolve().parent
CSRC = HERE.parent / "csrc"
OUT = CSRC / "gen"
HAND_C = ["shim.c", "families.c", "emulate.c", "coll.c"]
HAND_F = ["fortran_openmpi.h"]


def hand_written():
    """Names the hand-written wrappers define: `int MPI_X(` at a line start, and the wrapper
    macros' instantiations (`SEND_WRAP(Send, ...)` defines MPI_Send)."""
    c, f = set(), set()
    macro_c = {}
    for name in HAND_C:
        p = CSRC / name
        if not p.exists():
            continue
        text = p.read_text()
        c.update(re.findall(r"^(?:int|double) MPI_(\w+)\(", text, re.M))
        # A macro defining MPI_##NAME: each instantiation NAME(first-arg, ...) defines MPI_first.
        for m in re.finditer(r"^#define (\w+)\((\w+)[,)][^\n]*\n(?:[^\n]*\\\n)*?[^\n]*MPI_##\2\(", text, re.M):
            macro_c[m.group(1)] = True
        for mac in macro_c:
            c.update(re.findall(r"^%s\((\w+)[,)]" % mac, text, re.M))
    for name in HAND_F:
        text = (CSRC / name).read_text()
        f.update(re.findall(r"^void mpi_(\w+)_\(", text, re.M))
        macros = re.findall(r"^#define (\w+)\((\w+)[,)][^\n]*\n(?:[^\n]*\\\n)*?[^\n]*mpi_##\2##_\(", text, re.M)
        for mac, _ in macros:
            f.update(re.findall(r"^%s\((\w+)[,)]" % mac, text, re.M))
    return c, f


def c_procs():
    """(name without MPI_, return type, parameter declarations, argument names) of every C
    binding, large-count forms included, sorted by name."""
    out = {}
    for key, p in std.PROCEDURES.items():
        for x in p.express.all_iso_c:
            if x.name.startswith("PMPI_"):
                continue
            params = [str(a) for a in x.parameters]
            if any("\\ldots" in s or "..." in s for s in params) or "\\ldots" in str(x):
                continue  # varargs (MPI_Pcontrol): hand-written
            names = [a.name for a in x.parameters]
            out[x.name[4:]] = (str(x.return_type), params, names)
    return dict(sorted(out.items()))


def f_procs():
    """(name, return type, parameter count, number of CHARACTER parameters) of every Fortran
    (mpif.h) binding."""
    out = {}
    for key, p in std.PROCEDURES.items():
        x = p.express.f90
        if x is None:
            continue
        params = list(x.parameters)
        chars = sum(1 for a in params if "CHARACTER" in str(a.type))
        ret = str(x.return_type)
        cret = {"None": "void", "DOUBLE PRECISION": "double",
                "INTEGER(KIND=MPI_ADDRESS_KIND)": "MPI_Aint"}.get(ret)
        if cret is None:
            raise SystemExit(f"{key}: Fortran return type {ret} not handled")
        out[x.name.lower()[4:]] = (cret, len(params), chars)
    return dict(sorted(out.items()))


# Where the Forum's data and an installed library disagree on a prototype (a mismatch is a compile
# error, never a silent cast): name -> parameter declarations, per library where they differ.
OVERRIDES = {
    # The Forum's data renders argv as `char argv[]`; MPI 4.0 §11.4 has `char *argv[]`.
    "Info_create_env": {None: ["int argc", "char* argv[]", "MPI_Info* info"]},
    # MPICH 4.0 declares the partitions array without const.
    "Pready_list": {
        "MPICH": ["int length", "int array_of_partitions[]", "MPI_Request request"],
    },
}

# The large-count (`_c`) collectives of MPI 4.0 (blocking, nonblocking, persistent; the
# neighbourhood ones apart): under the LogGP knobs each call is counted among the communication
# calls no knob touches (cpmpi_emu_other), with the bytes of its send contribution as the int
# forms' wrappers count them (csrc/shim.c, families.c; helpers there). A persistent one counts
# at its init.
OTHER_BYTES = {
    "Allgather": "bytes_c(sendtype, sendcount)",
    "Allgatherv": "bytes_c(sendtype, sendcount)",
    "Allreduce": "bytes_c(datatype, count)",
    "Alltoall": "bytes_c(sendtype, sendcount) * csize(comm)",
    "Alltoallv": "sum_counts_c(sendcounts, sendtype, comm)",
    "Alltoallw": "sum_w_c(sendcounts, sendtypes, comm)",
    "Bcast": "bytes_c(datatype, count)",
    "Exscan": "bytes_c(datatype, count)",
    "Gather": "bytes_c(sendtype, sendcount)",
    "Gatherv": "bytes_c(sendtype, sendcount)",
    "Reduce": "bytes_c(datatype, count)",
    "Reduce_scatter": "sum_counts_c(recvcounts, datatype, comm)",
    "Reduce_scatter_block": "bytes_c(datatype, recvcount) * csize(comm)",
    "Scan": "bytes_c(datatype, count)",
    "Scatter": "bytes_c(recvtype, recvcount)",
    "Scatterv": "bytes_c(recvtype, recvcount)",
}


def other_bytes(name):
    """The bytes expression of a large-count collective `name` (without MPI_), or None."""
    if not name.endswith("_c"):
        return None
    base = name[:-2]
    if base.endswith("_init"):
        base = base[: -len("_init")]
    elif base.startswith("I") and base[1:].capitalize() in OTHER_BYTES and base[1:2].islower():
        base = base[1:].capitalize()
    return OTHER_BYTES.get(base)


HEADER = "/* Generated by crates/pmpi/gen/wrappers.py from the MPI Forum's API (pympistandard {v}): do not edit. */\n"


def gen_functions(cs):
    lines = [HEADER, "#pragma once\n", "enum {"]
    for n in cs:
        lines.append(f"    FN_{n},")
    lines.append("    FN_COUNT\n};\n")
    lines.append("static const char *const cpmpi_fn_names[FN_COUNT] = {")
    for n in cs:
        lines.append(f'    "MPI_{n}",')
    lines.append("};\n")
    return "\n".join(lines)


def gen_c(cs, hand):
    lines = [HEADER, "/* Included at the end of csrc/shim.c: ENTER/LEAVE are its. Deprecated functions are\n"
             " * wrapped too: programs still call them. */\n",
             '#pragma GCC diagnostic ignored "-Wdeprecated-declarations"\n']
    for n, (ret, params, names) in cs.items():
        if n in hand:
            continue
        args = ", ".join(names)
        lines.append(f"#if defined(CPMPI_HAVE_{n}) && !defined(MPI_{n})")
        over = OVERRIDES.get(n, {})
        if None in over:
            params = over[None]
        flavours = [f for f in over if f is not None]
        for i, fl in enumerate(flavours):
            lines.append(f"#{'if' if i == 0 else 'elif'} defined(CPMPI_{fl})")
            lines.append(f"{ret} MPI_{n}({', '.join(over[fl])}) {{")
        if flavours:
            lines.append("#else")
        lines.append(f"{ret} MPI_{n}({', '.join(params) if params else 'void'}) {{")
        if flavours:
            lines.append("#endif")
        lines.append(f"    if (!ENTER(FN_{n})) return PMPI_{n}({args});")
        lines.append(f"    {ret} rc = PMPI_{n}({args});")
        ob = other_bytes(n)
        if ob:
            lines.append(f"    if (rc == MPI_SUCCESS && EMU_ON()) cpmpi_emu_other({ob});")
        lines.append("    LEAVE();")
        lines.append("    return rc;")
        lines.append("}")
        lines.append("#endif")
    return "\n".join(lines) + "\n"


def gen_f(fs, cs, hand_f):
    lines = [HEADER, "/* Open MPI's Fortran symbols (csrc/fortran_openmpi.h is included before). Every argument of\n"
             " * a Fortran binding is passed by reference; each CHARACTER argument adds a hidden length\n"
             " * after the last argument (gfortran: size_t). pmpi_x_ is weak: a library without it\n"
             " * has no mpi_x_ either, so no program calls this wrapper there. */\n"]
    cnames = {n.lower(): n for n in cs}
    # pmpi_x_ the hand-written file already declares (with MPI_Fint pointers): not again.
    declared = set(re.findall(r"^extern void pmpi_(\w+)_\(", (CSRC / HAND_F[0]).read_text(), re.M))
    for n, (ret, nparams, chars) in fs.items():
        if n in hand_f or n not in cnames:
            continue
        cn = cnames[n]
        ps = [f"void *a{i}" for i in range(nparams)] + [f"size_t l{i}" for i in range(chars)]
        args = ", ".join([f"a{i}" for i in range(nparams)] + [f"l{i}" for i in range(chars)])
        proto = ", ".join(ps) if ps else "void"
        call = f"pmpi_{n}_({args})"
        if n not in declared:
            lines.append(f"extern {ret} pmpi_{n}_({proto}) __attribute__((weak));")
        lines.append(f"{ret} mpi_{n}_({proto}) {{")
        if ret == "void":
            lines.append(f"    if (!ENTER(FN_{cn})) {{ {call}; return; }}")
            lines.append(f"    {call};")
            lines.append("    LEAVE();")
        else:
            lines.append(f"    if (!ENTER(FN_{cn})) return {call};")
            lines.append(f"    {ret} rc = {call};")
            lines.append("    LEAVE();")
            lines.append("    return rc;")
        lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    check = "--check" in sys.argv[1:]
    std.use_api_version(1)
    version = getattr(std, "__version__", None)
    if version is None:
        from importlib.metadata import version as v
        version = v("pympistandard")
    hand_c, hand_f = hand_written()
    cs = c_procs()
    fs = f_procs()
    unknown = sorted(hand_c - set(cs) - {"Pcontrol"})
    if unknown:
        raise SystemExit(f"hand-written wrappers of functions the standard does not list: {unknown}")
    files = {
        "functions.h": gen_functions(cs),
        "wrappers_c.h": gen_c(cs, hand_c),
        "wrappers_f.h": gen_f(fs, cs, hand_f),
    }
    files = {k: v.replace("{v}", version) for k, v in files.items()}
    stale = []
    for name, text in files.items():
        p = OUT / name
        if check:
            if not p.exists() or p.read_text() != text:
                stale.append(name)
        else:
            OUT.mkdir(exist_ok=True)
            p.write_text(text)
    if stale:
        print(f"csrc/gen/{', '.join(stale)}: not what gen/wrappers.py generates; rerun it", file=sys.stderr)
        sys.exit(1)
    n_gen = sum(1 for n in cs if n not in hand_c)
    print(f"{len(cs)} C functions ({len(hand_c)} hand-written, {n_gen} generated), "
          f"{len(fs)} Fortran ({len(hand_f)} hand-written)", file=sys.stderr)


if __name__ == "__main__":
    main()
