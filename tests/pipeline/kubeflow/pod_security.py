"""The Pod Security Standards' "restricted" profile (Kubernetes v1.30+), checked on a pod spec as admission does.

A namespace labelled `pod-security.kubernetes.io/enforce: restricted` refuses a pod that breaks any of
these controls (https://kubernetes.io/docs/concepts/security/pod-security-standards/): the baseline
ones (no host namespaces, ports or paths, no privileged containers, only the baseline capabilities
added, no unconfined seccomp or AppArmor, only safe sysctls) and the restricted ones (only the
ephemeral and projected volume types, no privilege escalation, non-root, a RuntimeDefault or
Localhost seccomp profile, every capability dropped and at most NET_BIND_SERVICE added).
"""

from __future__ import annotations

from typing import Any

RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}


def restricted_violations(pod: dict[str, Any]) -> list[str]:
    """Every restricted-profile control the pod spec breaks, one line each ([] when it passes)."""
    found = []
    context = pod.get("securityContext", {})
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(host):
            found.append(f"{host}: must be unset or false")
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if kinds - RESTRICTED_VOLUMES:
            found.append(f"volume {volume['name']}: type {sorted(kinds - RESTRICTED_VOLUMES)} not allowed")
    for sysctl in context.get("sysctls", []):
        if sysctl["name"] not in SAFE_SYSCTLS:
            found.append(f"sysctl {sysctl['name']}: not a safe sysctl")
    containers = [*pod.get("initContainers", []), *pod.get("containers", []), *pod.get("ephemeralContainers", [])]
    for container in containers:
        own = container.get("securityContext", {})
        name = f"container {container['name']}"
        if own.get("privileged"):
            found.append(f"{name}: privileged")
        if own.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}: allowPrivilegeEscalation must be false")
        if any(port.get("hostPort") for port in container.get("ports", [])):
            found.append(f"{name}: hostPort")
        capabilities = own.get("capabilities", {})
        if "ALL" not in capabilities.get("drop", []):
            found.append(f"{name}: capabilities must drop ALL")
        if set(capabilities.get("add", [])) - {"NET_BIND_SERVICE"}:
            found.append(f"{name}: capabilities may add only NET_BIND_SERVICE")
        if own.get("procMount", "Default") != "Default":
            found.append(f"{name}: procMount must be Default")
        non_root = own.get("runAsNonRoot", context.get("runAsNonRoot"))
        if non_root is not True:
            found.append(f"{name}: runAsNonRoot must be true (in the container or the pod)")
        if own.get("runAsUser", context.get("runAsUser")) == 0:
            found.append(f"{name}: runAsUser must not be 0")
        seccomp = (own.get("seccompProfile") or context.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{name}: seccompProfile.type must be RuntimeDefault or Localhost (got {seccomp})")
        apparmor = (own.get("appArmorProfile") or context.get("appArmorProfile") or {}).get("type")
        if apparmor == "Unconfined":
            found.append(f"{name}: appArmorProfile must not be Unconfined")
    return found
