"""`dojo fit`: system identification from recorded motion (docs/fit.md).

- ``task``: fit files (parameters by label with bounds, ties and wildcards; data; loss; solver);
- ``data``: recordings from our storage files and motion-capture tables (NPZ, CSV, HDF5);
- ``problem``: the residuals (one-step prediction, multiple shooting) and their exact
  parameter Jacobians from the core's step gradients;
- ``solve``: scipy's bounded least squares, multi-start, the Gauss-Newton covariance;
- ``metrics``: whole recordings simulated from their first frames and their errors;
- ``results``: the fitted scene, the report (JSON, text) and plots.
"""

import sys
import types


class _CallableModule(types.ModuleType):
    """``dojo.fit(task)`` is the API's function (dojo_cli.api.fit) and ``dojo_cli.fit`` this
    package, made callable as dojo_cli.optimize is (see its __init__): the two names cannot
    disagree, whatever was imported first."""

    def __call__(self, task, progress=None):
        from dojo_cli.api import fit

        return fit(task, progress)


sys.modules[__name__].__class__ = _CallableModule
