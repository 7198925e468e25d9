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
extensions = [
    Extension("cython_ext." + os.path.splitext(os.path.basename(p))[0], [p],
              include_dirs=[numpy.get_include()],
              extra_compile_args=["-O3"])
    for p in sorted(glob.glob("cython_ext/*.pyx"))
]
setup(name="cython_ext", packages=[], py_modules=[], ext_modules=cythonize(
    extensions, language_level=3, quiet=True,
    compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True,
                         "initializedcheck": False}) if extensions else [])
