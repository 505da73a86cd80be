"""Test hosts as Linux network namespaces on one bridge (root and iproute2 needed).

The root namespace holds the bridge and the shared services (PostgreSQL behind PgBouncer,
Redis), listening on the bridge's address; each host is a namespace with its own loopback and
one veth leg on the bridge, so whatever a host runs reaches the services over a network
interface, as a second machine would. Every name starts with a per-run prefix, and
``teardown`` removes what that prefix owns, whatever state the run died in.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field

SUBNET = "10.231.7"  # a /24 private range; the bridge is .1, host n is .(10 + n)


class NetnsError(RuntimeError):
    pass


@dataclass(frozen=True)
class Host:
    """One test host: its namespace, its veth leg in the root namespace, its address."""

    namespace: str
    veth: str
    address: str

    def wrap(self, command: list[str]) -> list[str]:
        """``command`` run inside this host (``ip netns exec`` execs it: same pid)."""
        return ["ip", "netns", "exec", self.namespace, *command]


@dataclass
class Network:
    """A bridge in the root namespace and ``count`` hosts on it, all named ``prefix*``."""

    prefix: str
    count: int
    hosts: list[Host] = field(default_factory=list)

    def __post_init__(self) -> None:
        if len(self.prefix) > 9:
            # Linux interface names are at most 15 characters: prefix + "-br" / "-h12".
            raise NetnsError(f"network prefix {self.prefix!r} is longer than 9 characters")

    @property
    def bridge(self) -> str:
        return f"{self.prefix}-br"

    @property
    def gateway(self) -> str:
        """The root namespace's address on the bridge, where the services listen."""
        return f"{SUBNET}.1"

    def planned_hosts(self) -> list[Host]:
        return [
            Host(f"{self.prefix}-h{n}", f"{self.prefix}-h{n}", f"{SUBNET}.{10 + n}")
            for n in range(1, self.count + 1)
        ]

    def setup_commands(self) -> list[list[str]]:
        """The iproute2 commands that build the network, in order."""
        commands = [
            ["ip", "link", "add", self.bridge, "type", "bridge"],
            ["ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge],
            ["ip", "link", "set", self.bridge, "up"],
        ]
        for host in self.planned_hosts():
            commands += [
                ["ip", "netns", "add", host.namespace],
                ["ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0",
                 "netns", host.namespace],
                ["ip", "link", "set", host.veth, "master", self.bridge, "up"],
                ["ip", "-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0"],
                ["ip", "-n", host.namespace, "link", "set", "eth0", "up"],
                ["ip", "-n", host.namespace, "link", "set", "lo", "up"],
            ]  # fmt: skip
        return commands

    def setup(self) -> None:
        if shutil.which("ip") is None:
            raise NetnsError("the ip command is missing: install iproute2 (Debian: iproute2)")
        self.teardown()  # leftovers of a run of the same prefix that was killed hard
        for command in self.setup_commands():
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise NetnsError(
                    f"{' '.join(command)} failed: {result.stderr.strip()} (the multi-host "
                    "harness needs root, or CAP_NET_ADMIN and CAP_SYS_ADMIN)"
                )
        self.hosts = self.planned_hosts()

    def teardown(self) -> None:
        """Delete this prefix's namespaces and links; what is already gone is skipped."""
        namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
        for line in namespaces.stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith(f"{self.prefix}-"):
                subprocess.run(["ip", "netns", "delete", name], capture_output=True)
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
        for line in links.stdout.splitlines():
            name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
            if name.startswith(f"{self.prefix}-"):
                subprocess.run(["ip", "link", "delete", name], capture_output=True)
        self.hosts = []
