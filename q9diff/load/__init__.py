"""Will it load there? A load verdict for a context binary on a named QAIRT runtime and device, from the
files alone: `runtime` (versions as users write them, or read from Qualcomm's runtime libraries) and
`rules` (each rule a row with the error the runtime prints and how that is known), over the measured data
of scripts/measure_compat.py (compat_measured.json)."""
