"""How a run builds and boots: the options `ktopic build`, `boot` and
`ci` share, handed from the command line to the runner.

Takes the command line's choices; gives the Options a run reads."""

from __future__ import annotations

from dataclasses import dataclass

from ktopic.gates import registry


@dataclass
class Options:
    smp: int | None = None           # guest CPUs; None: each target's (manifest smp:)
    memory: str = "1G"
    accel: str = "auto"              # auto | kvm | tcg
    timeout: float = 120.0           # reference seconds, scaled by machine speed
    silence: float = 30.0            # reference seconds, scaled by machine speed
    variant: str = ""                # the whole run's build variant (qemu/variants.yaml)
    sanitizers: bool = False         # also run the manifest's `sanitizers:` variants
    use_cache: bool = True
    base_cache: bool = True          # the base's result may come from the cache
    jobs: int = 0
    progress: bool = True
    check: bool = False              # run the patch gates (ktopic check) as a stage
    build: bool = True               # False: generate and gates only, no build/boot/test
    gates: tuple[str, ...] = ()      # the topic gates (gates/registry.py, ktopic check
                                     # --bisect ...), per topic just before its build, which they block
    mutate: bool = False             # the mutation gate per topic, after its plain result
    tiers: bool = False              # the main job's two tiers (runner/tiers.py)
    attribute: int = 12              # boots to find a failure's first bad commit; 0: none
    first_verdict: bool = False      # with tiers: stop after the first (make verdict)


# The main job's gates: what `ktopic ci --main-job` turns on (each is also
# an option of its own, --bisect ...).  `make` runs `ktopic ci --main-job`
# on every branch and ci/run-branch, so every pipeline job, on one: a
# branch's job gives the verdict the main job gives it.  --mutate is a
# no-op for a topic without qemu/mutants/<topic>/ and for the integration
# branch, the topic gates for the integration branch, so one set
# serves every job.  The manifest's sanitizer variants run in any `ktopic
# ci` (not with --no-sanitizers), the integration branch's standing for
# the topics' when it is in the run (model/sanitizerplan.py).
MAIN_JOB_GATES = registry.main_job() + ("mutate",)
