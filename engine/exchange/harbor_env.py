"""The Harbor environment written beside exported Harbor tasks (``sandmle_harbor.py``), for Docker daemons that
cannot pull images, as on these machines.

Harbor 0.25's ``docker`` environment enforces ``network_mode = "no-network"`` with an egress-control sidecar that it
builds from images pulled from a registry (a pinned ``alpine``); where nothing can be pulled it finds no kernel
support and refuses every no-network task ("network_mode='no-network' is not supported by
EnvironmentType.DOCKER"). This subclass is Harbor's own docker environment with Docker's own isolation in place of
the sidecar: the task's containers run with ``network_mode: none`` (Harbor's ``docker-compose-no-network.yaml``),
which nothing inside a container can undo. Everything else -- building, the agents, the verifier, the reward -- is
Harbor's. It is written as text (it imports harbor, which lives in a Python 3.12 venv of its own)."""

from __future__ import annotations

#: the module name of the file written beside the tasks, and the class Harbor's ``--env`` names
MODULE, CLASS = "sandmle_harbor", "OfflineDockerEnvironment"

SOURCE = '''"""Harbor's docker environment with Docker's own network isolation (written by sandmle beside its Harbor tasks).

Harbor's docker environment enforces network_mode = "no-network" with an egress-control sidecar built from images
it pulls; where Docker cannot pull, it refuses every no-network task. This one runs the task's containers with
network_mode none instead (Harbor's docker-compose-no-network.yaml). Use it as

    PYTHONPATH=<this folder> harbor run -p <this folder> -a oracle -e sandmle_harbor:OfflineDockerEnvironment
"""

from harbor.environments.docker import COMPOSE_NO_NETWORK_PATH
from harbor.environments.docker.docker import DockerEnvironment
from harbor.models.task.config import NetworkMode


class OfflineDockerEnvironment(DockerEnvironment):
    """Harbor's docker environment; a no-network task's containers get network_mode none."""

    @property
    def _offline(self) -> bool:
        policy = getattr(self, "_network_policy", None)
        return policy is not None and policy.network_mode == NetworkMode.NO_NETWORK

    @property
    def capabilities(self):
        # network_mode none enforces no-network (Harbor's sidecar, where it runs, does too)
        return super().capabilities.model_copy(update={"disable_internet": True})

    @property
    def _docker_compose_paths(self):
        paths = list(super()._docker_compose_paths)
        if self._offline and not self._enable_egress_control:
            paths.append(COMPOSE_NO_NETWORK_PATH)
        return paths
'''
