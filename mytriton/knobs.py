"""``triton.knobs``: Triton 3.6's settings, as attributes of the same groups with the same
defaults, so that host code setting them (``triton.knobs.autotuning.print = True``) runs. mytriton
reads none of them: its own options are arguments (``jit(debug=...)``, ``compile(...)``) and the
``MYTRITON_*`` environment variables."""
from __future__ import annotations


class _Group:
    """One group of knobs: Triton's names with their defaults; any attribute may be set."""

    def __init__(self, name: str, **defaults):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_defaults", dict(defaults))
        for key, value in defaults.items():
            object.__setattr__(self, key, value)

    def __getattr__(self, key):
        raise AttributeError(f"triton.knobs.{self._name} has no knob {key!r}")

    def reset(self):
        for key, value in self._defaults.items():
            object.__setattr__(self, key, value)
        return self

    def __repr__(self):
        return f"<triton.knobs.{self._name}>"


build = _Group("build", cc=None, cudacrt_path=None, cudart_path=None, backend_dirs=set(), impl=None)
redis = _Group("redis", key_format="triton:{key}:{filename}", host="localhost", port=6379)
cache = _Group("cache", home_dir=None, dump_dir=None, override_dir=None, dir=None, manager_class=None,
               remote_manager_class=None)
compilation = _Group("compilation", override=False, dump_ir=False, dump_ir_extract_di_local_variables=False,
                     store_binary_only=False, always_compile=False, use_ir_loc=None, enable_asan=False,
                     disable_line_info=False, front_end_debugging=False, allow_non_constexpr_globals=False,
                     instrumentation_mode="", listener=None)
autotuning = _Group("autotuning", cache=False, print=False)
runtime = _Group("runtime", interpret=False, debug=False, override_arch=None, launch_enter_hook=None,
                 launch_exit_hook=None, jit_cache_hook=None, jit_post_compile_hook=None,
                 add_stages_inspection_hook=None)
language = _Group("language", fp32_default=None, default_fp_fusion=True)
nvidia = _Group("nvidia", cuobjdump=None, nvdisasm=None, ptxas=None, ptxas_blackwell=None, dump_nvptx=False,
                disable_ptxas_opt=False, ptxas_options=None, mock_ptx_version=None, dump_ptxas_log=False,
                libdevice_path=None, libcuda_path=None)
amd = _Group("amd", use_buffer_ops=True, use_buffer_atomics=True, buffer_ops_analyze_small_tensor_range=False,
             dump_amdgcn=False, libhip_path=None, use_block_pingpong=None, use_in_thread_transpose=None,
             use_async_copy=False, scalarize_packed_fops=False)
proton = _Group("proton", disable=False, cupti_lib_dir=None, enable_nvtx=True)

__all__ = ["build", "redis", "cache", "compilation", "autotuning", "runtime", "language", "nvidia", "amd", "proton"]
