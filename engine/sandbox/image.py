"""The docker backend's base image, built here without a registry (``sandmle sandbox build-image``).

The image is an almost empty root filesystem imported with ``docker import``: empty ``tmp/`` and ``workspace/``,
a ``sbin/`` folder (where docker mounts its init), ``bin``, ``lib``, ``lib64`` as links into ``usr``, and an
``etc/passwd`` and ``etc/group`` naming root and nobody (Docker resolves ``exec --user root`` from the image's own
files, under any mount: Harbor's runner execs as root). Its
label :data:`HOST_MOUNTS_LABEL` tells the backend to bind-mount this machine's ``/usr``, ``/etc``, interpreter and
virtual env read-only at run time, so a container runs exactly the Python and packages of the host, with nothing
to download. Any other image named in ``[sandbox] docker_image`` (on a GPU server, say) brings its own ``python``,
``sh``, ``sleep``, ``timeout`` and util-linux (``prlimit``, ``setpriv``).
"""

from __future__ import annotations

import io
import tarfile
from typing import TYPE_CHECKING

from ..config import DEFAULT_DOCKER_IMAGE
from .features import python_paths

if TYPE_CHECKING:  # the docker SDK is an optional dependency, imported by the backend only when used
    from docker import DockerClient

#: the image the docker backend uses unless ``[sandbox] docker_image`` names another
BASE_IMAGE = DEFAULT_DOCKER_IMAGE
#: label of images that need the host's system and Python folders mounted
HOST_MOUNTS_LABEL = "sandmle.host-mounts"
#: host folders bind-mounted read-only into containers of a host-mounts image
SYSTEM_MOUNTS = ("/usr", "/etc")


#: the users and groups of the base image's own /etc (what ``docker exec --user`` reads)
PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"


def host_mounts() -> list[str]:
    """What a host-mounts container binds read-only: the system folders, the interpreter and the virtual env."""
    inside = [p for p in python_paths() if any(p == s or p.startswith(s + "/") for s in SYSTEM_MOUNTS)]
    return [*SYSTEM_MOUNTS, *(p for p in python_paths() if p not in inside)]


def base_root_tar() -> bytes:
    """The base image's root filesystem as a tar archive."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, mode in (("tmp", 0o1777), ("workspace", 0o777), ("usr", 0o755), ("etc", 0o755), ("sbin", 0o755)):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        for name, text in (("etc/passwd", PASSWD), ("etc/group", GROUP)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        for name in ("bin", "lib", "lib64"):
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, f"usr/{name}", 0o777
            tar.addfile(info)
    return buf.getvalue()


def build_base_image(client: DockerClient, name: str = BASE_IMAGE) -> str:
    """Import the base image under ``name`` (replacing an older one); returns its id."""
    repository, _, tag = name.partition(":")
    client.api.import_image_from_data(
        base_root_tar(), repository=repository, tag=tag or "latest",
        changes=[f"LABEL {HOST_MOUNTS_LABEL}=1", "ENV PATH=/usr/local/bin:/usr/bin:/bin", "WORKDIR /workspace"])
    return str(client.images.get(name).id)
