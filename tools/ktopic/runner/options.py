"""How a run builds and boots: the options `ktopic build`, `boot` and
`ci` share, handed from the command line to the runner.

Takes the command line's choices; gives the Options a run reads."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Options:
    smp: int | None = None           # guest CPUs; None: each target's (manifest smp:)
    memory: str = "1G"
    accel: str = "auto"              # auto | kvm | tcg
    timeout: float = 120.0           # reference seconds, scaled by machine speed
    silence: float = 30.0            # reference seconds, scaled by machine speed
    kasan: bool = False
    kcsan: bool = False
    sanitizers: bool = False         # also run the manifest's `sanitizers:` variants
    use_cache: bool = True
    base_cache: bool = True          # the base's result may come from the cache
    jobs: int = 0
    progress: bool = True
    check: bool = False              # run the patch gates (ktopic check) as a stage
    build: bool = True               # False: generate and gates only, no build/boot/test
    bisect: bool = False             # the build gates (ktopic check --bisect, --warnings)
    warnings: bool = False           # run per topic just before its build, which they block
    mutate: bool = False             # the mutation gate per topic, after its plain result
