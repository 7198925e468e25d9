"""The UWB protocol (onboard/comms/uwb) compiled by Cython from the same .py sources (pure-Python mode).

``python cython_ext/setup.py build_ext --inplace`` (``make setup``) builds one extension per module of
onboard/comms/uwb as ``cython_ext.uwb.<module>``; the ``.pxd`` files here only add types (extension
classes with slots, C-level calls between the hot methods). The modules import each other relatively,
so the compiled node uses the compiled frames. Selected by ``onboard.impl`` (``ONBOARD_IMPL=cython``)
through :data:`onboard.comms.uwb.node.IMPL_MODULES`; the pure package stays the default and the source.
"""
