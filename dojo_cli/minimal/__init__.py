"""Minimal coordinates: PinnZoo's functions on the core's tree algorithms (docs/minimal.md).

``from dojo_cli import minimal``; ``model = minimal.build_model(mech)``; then
``minimal.M_func(model, x)`` and the rest, with PinnZoo's names and meanings.
"""

from dojo_cli.minimal.dynamics import (  # noqa: F401
    C_func, M_func, dynamics, dynamics_deriv, forward_dynamics, forward_dynamics_deriv, inverse_dynamics,
    inverse_dynamics_deriv, inverse_dynamics_hTvp, inverse_dynamics_hvp, kinematics, kinematics_force_hTvp, kinematics_force_hvp, kinematics_force_jacobian,
    kinematics_hvp, kinematics_jacobian, kinematics_jacobianTvp, kinematics_rotation, kinematics_velocity,
    kinematics_velocity_jacobian, lock_forces, velocity_kinematics, velocity_kinematics_T,
    velocity_kinematics_T_jvp_deriv, velocity_kinematics_jvp_deriv,
)
from dojo_cli.minimal.model import MinimalModel, build_model  # noqa: F401
from dojo_cli.minimal.quaternions import (  # noqa: F401
    L_mult, R_mult, attitude_jacobian, axis_angle_to_quat, quat_conjugate, quat_to_axis_angle, quat_to_rot,
    rot_to_quat, skew,
)
from dojo_cli.minimal.inputs import B_func, passive_forces  # noqa: F401
from dojo_cli.minimal.orders import (  # noqa: F401
    ConversionIndices, change_order, change_order_inplace, change_orders, change_orders_inplace, conversion_indices,
    order_names, register_order,
)
from dojo_cli.minimal.ik import fix_joint_limits, ik_coordinates, inverse_kinematics, nearest_ik  # noqa: F401
from dojo_cli.minimal.integrator import (  # noqa: F401
    ButcherTableau, CoreDynamics, ExpandingStorage, MechanismState, MuntheKaasIntegrator, RingBufferStorage,
    additional_state, configuration, global_coordinates, initialize, integrate, local_coordinate_rates, process,
    runge_kutta_4, set_additional_state, set_configuration, set_velocity, step, velocity,
)
from dojo_cli.minimal.simulate import Rk4, loop_joint_errors, simulate  # noqa: F401
from dojo_cli.minimal.states import (  # noqa: F401
    apply_dx, error_jacobian, error_jacobian_T, init_state, randn_state, state_error, zero_state,
)
