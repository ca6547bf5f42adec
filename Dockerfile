# syntax=docker/dockerfile:1
# The fleetlab lab image: JupyterLab on the student notebooks, with the course library installed
# once, at build time. A learner's image: no instructor package, no labs/solutions/ (.dockerignore
# keeps both out of the build context).
#
#   docker build -t fleetlab-lab:0.1.0 .
#   docker run --rm -p 127.0.0.1:8888:8888 fleetlab-lab:0.1.0
#
# then open the http://127.0.0.1:8888/lab?token=... address the container prints.
# docker-compose.yml builds the same image and points it at LocalStack.

# Pinned to an exact release of Python 3.11 (the Python environment.yml and CI use).
FROM python:3.11.15-slim-trixie

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The library (with JupyterLab, the lab extra) and its tooling, into the image's Python, owned by
# root: the learner's kernels import it and cannot change its files. The sources are removed afterwards.
# JupyterHub (the pin of pyproject.toml's test extra) gives the image `jupyterhub-singleuser`, so that
# Zero to JupyterHub can run it as a room's single-user image (deploy/jupyterhub/README.md).
# rfc3987-syntax goes, as in `make venv`: jsonschema would import it into every kernel (2 s of CPU each).
COPY pyproject.toml README.md LICENSE /tmp/fleetlab/
COPY src /tmp/fleetlab/src
COPY tools /tmp/fleetlab/tools
RUN pip install "/tmp/fleetlab[lab]" /tmp/fleetlab/tools "jupyterhub==6.1.1" \
    && pip uninstall --yes rfc3987-syntax \
    && rm -rf /tmp/fleetlab

# The learner: an unprivileged user (uid 1000, as JupyterHub's single-user images use) whose home
# holds the notebooks and the progress file.
RUN useradd --create-home --uid 1000 --user-group --shell /bin/bash learner
COPY --chown=learner:learner labs /home/learner/labs
# A copy no learner can change: a hub that mounts a volume over the home copies the labs from here
# into a new learner's home (deploy/jupyterhub/README.md).
COPY labs /opt/fleetlab/labs

# By number, so that a runtime checking "not root" (Kubernetes' runAsNonRoot) can verify it.
USER 1000:1000
WORKDIR /home/learner/labs

# moto inside the kernel: nothing else to start. docker-compose.yml sets localstack instead.
ENV FLEETLAB_BACKEND=moto

EXPOSE 8888

# Inside a container JupyterLab listens on all of the container's interfaces (0.0.0.0): Docker
# forwards a published port to the container's own network interface, never to its loopback,
# so a server on 127.0.0.1 in here could not be reached at all. Who can reach it is decided
# where the port is published: docker-compose.yml and the `docker run` line above publish it on
# the host's 127.0.0.1 only. JupyterLab's token (printed at start) still guards every request.
CMD ["jupyter", "lab", "--ServerApp.root_dir=/home/learner/labs", "--ip=0.0.0.0", "--port=8888", "--no-browser"]
