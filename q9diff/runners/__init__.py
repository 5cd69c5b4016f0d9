"""Run context binaries and compare what they compute: runners behind one small interface.

A runner opens a set of context binaries as a `Session`; a session lists the graphs it can run
(`GraphSpec`, from the binaries' own metadata) and runs one graph on named numpy inputs. Runners:
`local` (Qualcomm's x86 HTP emulator inside onnxruntime-qnn, in a child process) and
`ssh://user@host` (an EVK, `q9diff.runners.ssh`) open binaries as sessions; the CPU reference
(`q9diff.runners.local.cpu_session`) opens a recipe's source ONNX models the same way; Genie bundles
run whole dialogs instead (`q9diff.runners.genie`, `q9diff verify --runner genie`).
"""
