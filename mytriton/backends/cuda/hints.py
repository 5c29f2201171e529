"""The CUDA helpers of loads and stores with Triton's ``cache_modifier=`` / ``eviction_policy=``:
``mt_load_<hint>(p, pred, v)`` and ``mt_store_<hint>(p, v, pred)``, written into a kernel's source
for the hints it uses (``helper``).

Each moves one element or chunk (1, 2, 4, 8 or 16 bytes, as the unsigned word
``mt_uint_of_size<bytes>``) in one unpredicated access carrying Triton's PTX qualifiers:

- cache modifiers through CUDA's cache-operator intrinsics (``__ldcg``, ``__stcs``, ...: the PTX
  ``ld.global.cg``, ``st.global.cs``, ...);
- eviction policies through inline PTX, ``ld``/``st.global.L1::evict_*.L2::cache_hint`` with an L2
  policy made by ``createpolicy`` (as Triton's; sm_80 and later, a plain access before).

Loads are unpredicated — a masked-off one reads the template's 16 zero bytes ``mt_masked_off``,
then keeps ``v`` — because ptxas schedules them as plain loads then, where a predicated inline-PTX
load stays where it is written (a loop's iterations would not overlap their loads). Stores test
their predicate in C++. Host compilers (the CPU emulator of the tests) copy the bytes.
"""
from __future__ import annotations

from ...ir.ops import EVICTION_POLICIES, ptx_hint, ptx_l2_policy

# the cache-operator intrinsics of each cache modifier (ir/ops.py's LOAD_ / STORE_CACHE_MODIFIERS)
_LOAD_INTRINSICS = {"ca": "__ldca", "cg": "__ldcg", "cv": "__ldcv"}
_STORE_INTRINSICS = {"wb": "__stwb", "cg": "__stcg", "cs": "__stcs", "wt": "__stwt"}

# (bytes, PTX type, the word's register operands, their constraint) of an evicting access
_WORDS = [(16, "v4.u32", ["w.x", "w.y", "w.z", "w.w"], "r"), (8, "u64", ["w"], "l"), (4, "u32", ["w"], "r"),
          (2, "u16", ["h"], "h"), (1, "u8", ["h"], "h")]


def helper(kind: str, hint: str) -> list[str]:
    """The C++ lines of ``mt_<kind>_<hint>`` (kind: "load" or "store")."""
    if kind == "load":
        head = [f"template <class T> __device__ __forceinline__ T mt_load_{hint}(const T* p, bool pred = true, "
                "T v = T()) {"]
        host = ["  if (pred) memcpy(&v, p, sizeof(T));", "  return v;"]
        if hint in EVICTION_POLICIES:
            device = _evicting(kind, hint)
        else:
            device = ["  typedef typename mt_uint_of_size<sizeof(T)>::type W;",
                      f"  const W w = {_LOAD_INTRINSICS[hint]}(reinterpret_cast<const W*>("
                      "pred ? (const void*)p : (const void*)&mt_masked_off));",
                      "  if (pred) memcpy(&v, &w, sizeof(T));", "  return v;"]
    else:
        head = [f"template <class T> __device__ __forceinline__ void mt_store_{hint}(T* p, T v, bool pred) {{"]
        host = ["  if (pred) memcpy(p, &v, sizeof(T));"]
        if hint in EVICTION_POLICIES:
            device = _evicting(kind, hint)
        else:
            device = ["  typedef typename mt_uint_of_size<sizeof(T)>::type W;", "  W w;",
                      "  memcpy(&w, &v, sizeof(T));",
                      f"  if (pred) {_STORE_INTRINSICS[hint]}(reinterpret_cast<W*>(p), w);"]
    if hint in EVICTION_POLICIES:       # (createpolicy and .L2::cache_hint need sm_80)
        return head + ["#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800", *device, "#else", *host, "#endif", "}"]
    return head + ["#ifdef __CUDA_ARCH__", *device, "#else", *host, "#endif", "}"]


def _evicting(kind: str, policy: str) -> list[str]:
    """The device body of an access with an eviction policy: createpolicy, then one ld / st."""
    lines = ["  typedef typename mt_uint_of_size<sizeof(T)>::type W;"]
    if kind == "load":
        lines += ["  const W* q = reinterpret_cast<const W*>(pred ? (const void*)p : (const void*)&mt_masked_off);",
                  "  W w;"]
    else:
        lines += ["  if (!pred) return;", "  W* q = reinterpret_cast<W*>(p);", "  W w;", "  memcpy(&w, &v, sizeof(T));"]
    lines += ["  unsigned short h;", "  unsigned long long c;",
              f'  asm volatile("{ptx_l2_policy(policy, "%0")}" : "=l"(c));']
    for i, (nbytes, ptx_type, regs, constraint) in enumerate(_WORDS):
        test = "  " + ("if" if i == 0 else "else if") + f" constexpr (sizeof(T) == {nbytes})"
        n = len(regs)
        if kind == "load":
            text = (f"ld.global{ptx_hint(policy)}.{ptx_type} "
                    + ("{ " + ", ".join(f"%{k}" for k in range(n)) + " }" if n > 1 else "%0")
                    + f", [%{n}], %{n + 1};")
            outs = ", ".join(f'"={constraint}"({r})' for r in regs)
            stmt = f'asm volatile("{text}" : {outs} : "l"(q), "l"(c));'
            if regs == ["h"]:
                stmt += " w = (W)h;"
        else:
            text = (f"st.global{ptx_hint(policy)}.{ptx_type} [%0], "
                    + ("{ " + ", ".join(f"%{k + 1}" for k in range(n)) + " }" if n > 1 else "%1")
                    + f", %{n + 1};")
            ins = ", ".join(f'"{constraint}"({r})' for r in regs)
            stmt = (("h = (unsigned short)w; " if regs == ["h"] else "")
                    + f'asm volatile("{text}" :: "l"(q), {ins}, "l"(c) : "memory");')
        lines.append(f"{test} {{ {stmt} }}")
    if kind == "load":
        lines += ["  if (pred) memcpy(&v, &w, sizeof(T));", "  return v;"]
    return lines
