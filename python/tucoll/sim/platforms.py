"""The modelled machines: sim/platforms/ (platforms.json, calibrated/, a user's own .json), their
fingerprints, derived copies with other mechanisms, and where ranks go on their nodes."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from tucoll.build import REPO_ROOT
from tucoll.sim.errors import SimError


PLATFORM_DIR = REPO_ROOT / "sim" / "platforms"
PATCH_DIR = REPO_ROOT / "sim" / "simgrid-patches"  # what `make sim-build` applies to SimGrid


@dataclass(frozen=True)
class Platform:
    name: str
    file: Path
    hosts: list[str]
    ranks_per_node: int
    vendor: str
    copy_bandwidth: float
    summary: str
    # GPU platforms: what an IPC copy between the node's GPUs costs, per engine (seconds, bytes/s),
    # and a copy across a GPU's link to host memory (host_*, what `staged` pays twice); the sim
    # backend charges them (src/ipc/sim.cpp).
    ipc: dict | None = None
    # What a local copy or a datatype engine pays per contiguous piece (seconds), beside
    # copy_bandwidth: set by tucoll calibrate, 0 elsewhere.
    copy_piece: float = 0.0
    # What a tucoll call costs before its exchange (seconds, charged once per call: the library's
    # TUCOLL_SIM_CALL): measured by tucoll calibrate --here, 0 elsewhere.
    call_cost: float = 0.0
    # The entry as platforms.json (or the platform's own .json file) gives it.
    entry: dict = field(default_factory=dict, compare=False)

    def fingerprint(self) -> str:
        """The simulated machine, as far as a simulated time depends on it: the platform file's
        content (not its comments), the entry's model fields (all but its summary and file name)
        and the SimGrid patches. Stored beside simulated times (the figures' store, the sweeps'
        datasets, the calibration cache) so that a changed model is simulated again rather than
        its old times reused."""
        digest = hashlib.sha256(ET.canonicalize(from_file=str(self.file), with_comments=False,
                                                strip_text=True).encode())
        fields = {k: v for k, v in self.entry.items() if k not in ("summary", "file")}
        digest.update(json.dumps(fields, sort_keys=True).encode())
        options = self.options()
        for patch in sorted(PATCH_DIR.glob("*.patch")):
            text = patch.read_bytes()
            # A patch whose header says, on one line, that it is inert unless some options are set
            # changes no time on a platform that sets none of them (adding one must not re-key
            # every simulation).
            inert = re.search(rb"^Inert unless a platform sets: (.+)$", text, re.MULTILINE)
            if inert and not {o.strip() for o in inert.group(1).decode().split(",")} & options.keys():
                continue
            digest.update(patch.name.encode())
            digest.update(text)
        return digest.hexdigest()[:12]

    def options(self) -> dict[str, str]:
        """The SimGrid options the platform file sets (its <config> props)."""
        return {prop.get("id"): prop.get("value")
                for config in ET.parse(self.file).getroot().iter("config") for prop in config.iter("prop")}

    @classmethod
    def load(cls, name: str) -> "Platform":
        """A platform of sim/platforms/platforms.json or sim/platforms/calibrated/ by name, or one of
        a user's own: a JSON file holding one entry of that form (its "file" relative to the JSON
        file), such as a calibrated copy of a shipped platform."""
        if (PLATFORM_DIR / "calibrated" / f"{name}.json").is_file():  # tucoll calibrate --write
            name = str(PLATFORM_DIR / "calibrated" / f"{name}.json")
        if name.endswith(".json"):
            path = Path(name).resolve()
            if not path.is_file():
                raise SimError(f"no platform file {name}")
            entry, base, name = json.loads(path.read_text()), path.parent, path.stem
        else:
            table = platforms()
            if name not in table:
                raise SimError(f"unknown platform {name!r}; known: {', '.join(platform_names())}, "
                               "or a platform's .json file")
            entry, base = table[name], PLATFORM_DIR
        hosts = [f"{prefix}{i}{suffix}" for prefix, count, suffix in entry["hosts"] for i in range(count)]
        return cls(name, base / entry["file"], hosts, entry["ranks_per_node"], entry["vendor"],
                   float(entry["copy_bandwidth"]), entry["summary"], entry.get("ipc"),
                   float(entry.get("copy_piece", 0.0)), float(entry.get("call_cost", 0.0)), entry)


@functools.lru_cache(maxsize=None)
def model_of(platform: str) -> str:
    """A platform's fingerprint by name (Platform.load), read once per process."""
    return Platform.load(platform).fingerprint()


def platforms() -> dict:
    return json.loads((PLATFORM_DIR / "platforms.json").read_text())


def platform_names() -> list[str]:
    """The shipped platforms and the calibrated ones (sim/platforms/calibrated/, tucoll calibrate)."""
    return [*platforms(), *sorted(p.stem for p in (PLATFORM_DIR / "calibrated").glob("*.json"))]


def derived_platform(base: str, props: dict[str, float | str], path: Path, note: str = "",
                     bandwidth_scale: float = 1.0, torus: tuple[int, ...] | None = None, **entry_fields) -> Path:
    """Writes `path` (a .json platform entry, as `tucoll sim --platform` takes) and its .xml beside
    it: the shipped platform `base` with these SimGrid options set in its <config> (replacing
    the base's own values of the same options), its cluster's link bandwidth times
    `bandwidth_scale`, its torus of these dimensions (as many nodes as they hold), `note` as a
    comment heading the file, and `entry_fields` (summary, ranks_per_node, ...) in place of the
    base entry's."""
    entry = dict(platforms()[base])
    xml = (PLATFORM_DIR / entry["file"]).read_text()
    if torus is not None:
        if len(entry["hosts"]) != 1 or 'topology="TORUS"' not in xml:
            raise ValueError(f"{base}: a torus shape applies to one torus cluster")
        nodes = math.prod(torus)
        xml, found = re.subn(r'(<cluster\b[^>]*?\sradical=")[^"]*(")', rf"\g<1>0-{nodes - 1}\g<2>", xml)
        xml, found_too = re.subn(r'(<cluster\b[^>]*?\stopo_parameters=")[^"]*(")',
                                 rf"\g<1>{','.join(map(str, torus))}\g<2>", xml)
        if found != 1 or found_too != 1:
            raise ValueError(f"{base}: expected one <cluster radical=... topo_parameters=...>")
        prefix, _, suffix = entry["hosts"][0]
        entry["hosts"] = [[prefix, nodes, suffix]]
    if bandwidth_scale != 1.0:
        def scaled(match: re.Match) -> str:
            return f'{match.group(1)}{float(match.group(2)) * bandwidth_scale:g}{match.group(3)}"'
        xml, found = re.subn(r'(<cluster\b[^>]*?\sbw=")([0-9.eE+-]+)([kMG]?Bps)"', scaled, xml)
        if found != 1:
            raise ValueError(f"{base}: expected one <cluster bw=...> to scale, found {found}")
    for key in props:  # an option set twice in <config> is an error in SimGrid
        xml = re.sub(rf'\n\s*<prop id="{re.escape(key)}" value="[^"]*"/>', "", xml)
    added = "".join(f'\n    <prop id="{key}" value="{value}"/>' for key, value in props.items())
    xml = xml.replace("<config>", "<config>" + added, 1)
    if note:
        if "--" in note:
            raise ValueError("an XML comment cannot hold '--'")
        xml = xml.replace("<platform ", f"<!--\n{note.rstrip()}\n-->\n<platform ", 1)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".xml").write_text(xml)
    entry.update(entry_fields, file=path.with_suffix(".xml").name)
    path.with_suffix(".json").write_text(json.dumps(entry, indent=2) + "\n")
    return path.with_suffix(".json")


def hostfile_lines(platform: Platform, nprocs: int, ppn: int, mapping: str) -> list[str]:
    """One line per rank: sequential fills nodes in turn, cyclic deals ranks round-robin."""
    nodes = math.ceil(nprocs / ppn)
    if nodes > len(platform.hosts):
        raise SimError(f"{platform.name} models {len(platform.hosts)} nodes: {nprocs} ranks at {ppn} per node "
                       f"need {nodes}")
    if mapping == "sequential":
        return [platform.hosts[r // ppn] for r in range(nprocs)]
    return [platform.hosts[r % nodes] for r in range(nprocs)]
