"""Images: from the matrix to a built, pinned image that can run on this host.

``matrix`` reads images/matrix.yaml (which image runs which framework version on which
device), ``locks`` reads and compiles the hash-pinned lock files, ``pythons`` and ``bases``
provide the base image and its CPython (pulled by digest, bootstrapped with mmdebstrap, or a
relocatable build copied in), ``transport`` carries this host's pip settings and locked files
into a build, ``context`` renders the build context and names it by its recipe digest,
``build`` builds it (or finds it by tag; several at once) and reads its package manifests,
``buildkit`` reads what a build says as it goes, and ``feasibility``
is the pre-flight check of an image against this host (CPU flags, driver, GPU architectures).
"""
