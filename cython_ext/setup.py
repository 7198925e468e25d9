"""Builds every cython_ext/*.pyx in place as ``cython_ext.<name>``.

Run from anywhere: ``python cython_ext/setup.py build_ext --inplace`` (``make setup`` does).
"""
import glob
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(REPO_ROOT)
# modules linked against NumPy's static random library (numpy/random/lib/libnpyrandom.a, NumPy's documented way to
# call its distributions from C): the particle filter draws its standard normals in C, as numpy's Generator does
NPYRANDOM = {"library_dirs": [os.path.join(os.path.dirname(numpy.__file__), "random", "lib")],
             "libraries": ["npyrandom", "m"]}
LINKED = {"pf_kernels": NPYRANDOM}
extensions = [
    Extension("cython_ext." + os.path.splitext(os.path.basename(p))[0], [p],
              include_dirs=[numpy.get_include()],
              extra_compile_args=["-O3"], **LINKED.get(os.path.splitext(os.path.basename(p))[0], {}))
    for p in sorted(glob.glob("cython_ext/*.pyx"))
]
# The UWB protocol (onboard/comms/uwb) compiled from its .py sources in Cython's pure-Python mode as
# cython_ext.uwb.<module> (types in cython_ext/uwb/*.pxd), and the UWB channel's per-frame module likewise.
# Python semantics kept (default directives: bounds checks, negative indices, Python division) and no
# contraction of float operations: the same results.
UWB_MODULES = ["timestamps", "frames", "config", "node_base", "token_ring", "broadcast", "driver", "node"]
uwb_extensions = [
    Extension("cython_ext.uwb." + m, ["onboard/comms/uwb/%s.py" % m], extra_compile_args=["-O2", "-ffp-contract=off"])
    for m in UWB_MODULES
] + [Extension("cython_ext.uwb_channel_frame", ["harness/sim/radio/uwb_channel_frame.py"],
               extra_compile_args=["-O2", "-ffp-contract=off"]),   # the UWB channel simulator's per-frame work
       Extension("cython_ext.uwb_channel_truth", ["harness/sim/radio/uwb_channel_truth.py"],
                 extra_compile_args=["-O2", "-ffp-contract=off"])]  # ... and the scenario's ground truth
setup(name="cython_ext", packages=[], py_modules=[], ext_modules=(cythonize(
    extensions, language_level=3, quiet=True,
    compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True,
                         "initializedcheck": False}) if extensions else [])
    # force: Cython's dependency scan does not see these .pxd files (they sit apart from their .py sources)
    + cythonize(uwb_extensions, language_level=3, quiet=True, build_dir="build/cython", force=True))
