"""Run: from a spec and the user's options to finished jobs in a bundle being written.

``options`` holds what ``dlrepro run`` was asked (RunOptions) and turns command-line text into
it, ``jobs`` expands a spec into job.json bodies, ``hostinfo`` describes this host,
``executors`` run groups of jobs (in containers through a Docker-compatible engine, or in a
local Python) behind one interface, and ``runs`` is the loop that ties them together: datasets,
images, execution and the bundle, with nothing measured lost on failure or interruption.
"""
