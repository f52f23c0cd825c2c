"""singa: a Python API over the singa ONNX runtime, following Apache SINGA's modules.

* ``singa.device``  - CPU / CUDA / OpenCL devices
* ``singa.tensor``  - n-d arrays (numpy and DLPack interop), ``Tensor`` / ``PlaceHolder``
* ``singa.autograd``, ``singa.layer``, ``singa.opt``, ``singa.model`` - training
* ``singa.sonnx``   - the ONNX backend (``prepare``, ``SingaRep``), ``to_onnx``, ``SONNXModel``

singa's errors are raised as :class:`SingaError` subclasses that are also the
fitting built-in exception (``InvalidArgumentError`` is a ``ValueError``,
``InvalidTypeError`` a ``TypeError``, ``UnavailableError`` a ``RuntimeError``, ...), carrying the C++ message.
"""
import os as _os

from singa import _singa

SingaError = _singa.SingaError
InvalidArgumentError = _singa.InvalidArgumentError
NotFoundError = _singa.NotFoundError
UnimplementedError = _singa.UnimplementedError
OutOfMemoryError = _singa.OutOfMemoryError
UnavailableError = _singa.UnavailableError
AbiMismatchError = _singa.AbiMismatchError
InternalError = _singa.InternalError
InvalidTypeError = _singa.InvalidTypeError

__version__ = "0.1.0"


def _bundled_plugin_dir():
    """The plugins folder a wheel install ships (meson-python's .singa.mesonpy.libs), or None."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    site = _os.path.dirname(here)
    for libs in (".singa.mesonpy.libs", "singa.mesonpy.libs"):
        root = _os.path.join(site, libs)
        if _os.path.isdir(root):
            for dirpath, dirnames, _files in _os.walk(root):
                if _os.path.basename(dirpath) == "plugins" and _os.path.basename(_os.path.dirname(dirpath)) == "singa":
                    return dirpath
    return None


def _load_runtime():
    """Loads the plugins once: an installed wheel uses only its own plugins (not a
    build tree's or a system install's); a development build uses the defaults.
    SINGA_PLUGIN_PATH adds folders in both cases."""
    if _singa.runtime_loaded():
        return
    bundled = _bundled_plugin_dir()
    if bundled:
        _singa.load_runtime([bundled], use_default_dirs=False)
    else:
        _singa.load_runtime([])


_load_runtime()


def plugins():
    """Every plugin file the runtime considered: dicts with path, name, loaded, error, ..."""
    return _singa.plugins()


def set_option(key, value):
    """Sets a runtime-wide named option (docs/options.md), e.g. ``set_option("core.fuse_layers", 0)``.

    Every later prepare sees it where it sets no value of its own, and so do
    switches read at first use. The plugins loaded at ``import singa``: keys
    they read as they load (``cpu.spin_us``, ``cpu.cache_mb``) come from
    ``SINGA_OPTIONS`` set before the import. Booleans may be given as
    ``True``/``False``. A malformed value of a documented key raises
    :class:`InvalidArgumentError` naming the key.
    """
    if isinstance(value, bool):
        value = int(value)
    _singa.set_option(str(key), str(value))


def options():
    """The runtime-wide named options, as a dict of strings."""
    return dict(_singa.options())


from singa import device, tensor  # noqa: E402  (after the runtime is loaded)

__all__ = ["device", "tensor", "SingaError", "InvalidArgumentError", "NotFoundError", "UnimplementedError",
           "OutOfMemoryError", "UnavailableError", "AbiMismatchError", "InternalError", "InvalidTypeError", "plugins",
           "set_option", "options"]
