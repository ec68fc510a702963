"""Which CPUs a job with a thread count runs on: one CPU per physical core, within one NUMA node.

Linux describes each CPU under ``/sys/devices/system/cpu/cpuN/topology``: ``physical_package_id`` (its
socket), ``core_id`` (its core within the package) and ``thread_siblings_list`` (the SMT threads of that core,
e.g. "0,1" where siblings are numbered adjacently, "0,64" where they are not); and each NUMA node lists its
CPUs in ``/sys/devices/system/node/nodeM/cpulist``; a core is the set of CPUs its thread_siblings_list names. Taking
"the first N CPUs" may take two SMT threads of one core, or cross a node boundary, so that a 1 -> 2 thread sweep would
measure SMT or NUMA effects, not a second core. ``choose`` takes, of the CPUs the process may run on:

1. one CPU (the lowest-numbered thread) per core, all in the first node that has enough cores;
2. else one per core across nodes (the nodes with the most cores first);
3. else, when there are fewer cores than CPUs asked for, SMT siblings too: the cores' first threads, then
   their second ones, again within one node where one has enough CPUs;
4. else (fewer CPUs allowed than asked for) every allowed one.

The record (``describe``) names the CPUs, their package, core and node, and which rule chose them. Where the
topology cannot be read (no sysfs), the first N allowed CPUs are taken, and the record says so.
"""

import os

SYSFS = "/sys/devices/system"
# NVLink multicast off for every rank of a data-parallel job (runner.settings, runner.ranks): it can take shared GPUs
# out of service
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
RULES = {
    1: "one CPU per physical core, within one NUMA node",
    2: "one CPU per physical core, across NUMA nodes (no node has enough cores)",
    3: "SMT siblings included (fewer physical cores than CPUs asked for)",
    4: "every allowed CPU, SMT siblings included (fewer allowed than asked for: ranks share them)",
    None: "the first allowed CPUs (the CPU topology could not be read)",
}


def _text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except (IOError, OSError):
        return None


def parse_list(text):
    """CPU numbers of a sysfs list such as "0-3,8,10-11"."""
    found = []
    for part in (text or "").split(","):
        if "-" in part:
            low, high = part.split("-")
            found.extend(range(int(low), int(high) + 1))
        elif part.strip():
            found.append(int(part))
    return found


def read(cpus, root=SYSFS):
    """{cpu: {"package", "core", "node", "siblings"}} for ``cpus`` (siblings: the CPUs of its core, itself
    included), or None when any of them has no readable topology. A machine without NUMA nodes in sysfs counts
    as one node, 0."""
    nodes = {}
    for entry in sorted(os.listdir(os.path.join(root, "node"))) if os.path.isdir(os.path.join(root, "node")) else []:
        if entry.startswith("node") and entry[4:].isdigit():
            for cpu in parse_list(_text(os.path.join(root, "node", entry, "cpulist"))):
                nodes[cpu] = int(entry[4:])
    found = {}
    for cpu in cpus:
        folder = os.path.join(root, "cpu", "cpu%d" % cpu, "topology")
        package, core = _text(os.path.join(folder, "physical_package_id")), _text(os.path.join(folder, "core_id"))
        if package is None or core is None:
            return None
        siblings = parse_list(_text(os.path.join(folder, "thread_siblings_list"))) or [cpu]
        found[cpu] = {"package": int(package), "core": int(core), "node": nodes.get(cpu, 0), "siblings": siblings}
    return found


def core_count(cpus, root=SYSFS):
    """Number of physical cores ``cpus`` lie on (a core: the CPUs its thread_siblings_list names, counted once
    however many of them are in ``cpus``), or None when the topology of any of them cannot be read."""
    where = read(cpus, root) if cpus else None
    return len({tuple(w["siblings"]) for w in where.values()}) if where else None


def _cores(cpus, topology):
    """{node: [[the core's CPUs, ascending], ...]} of ``cpus``, the cores in order of their first CPU."""
    cores = {}
    for cpu in sorted(cpus):
        where = topology[cpu]
        cores.setdefault((where["node"], tuple(where["siblings"])), []).append(cpu)
    by_node = {}
    for (node, _), members in sorted(cores.items(), key=lambda item: item[1][0]):
        by_node.setdefault(node, []).append(members)
    return by_node


def _threads_first(cores):
    """The cores' CPUs, first threads before second ones: [c0t0, c1t0, ..., c0t1, c1t1, ...]."""
    depth = max(len(c) for c in cores)
    return [c[i] for i in range(depth) for c in cores if i < len(c)]


def choose(allowed, count, topology):
    """(CPUs in the order taken, rule number of RULES) for ``count`` CPUs of ``allowed`` (sorted) with
    ``topology`` (``read``'s, or None). Fewer than ``count`` when fewer are allowed."""
    if topology is None:
        return list(allowed[:count]), None
    # from here on, ``topology`` covers every allowed CPU (``read`` returns None otherwise)
    by_node = _cores(allowed, topology)
    nodes = sorted(by_node, key=lambda n: (-len(by_node[n]), n))
    for node in sorted(by_node):
        if len(by_node[node]) >= count:
            return [core[0] for core in by_node[node][:count]], 1
    if sum(len(c) for c in by_node.values()) >= count:
        return [core[0] for n in nodes for core in by_node[n]][:count], 2
    for node in sorted(by_node):
        if sum(len(c) for c in by_node[node]) >= count:
            return _threads_first(by_node[node])[:count], 3
    every = _threads_first([core for n in nodes for core in by_node[n]])
    return every[:count], 3 if len(every) >= count else 4


def describe(chosen, rule, topology):
    """The record of a choice: {"rule", "cpus": [{cpu, package, core, node, siblings}, ...]}."""
    return {"rule": RULES[rule], "cpus": [dict(topology[cpu], cpu=cpu) if topology else {"cpu": cpu} for cpu in chosen]}
