"""The check `q9diff doctor` runs on an ExecuTorch .pte given as the bundle: the compile spec executorch
stores beside each QNN delegate against the context binary it built (q9diff.compare.container), where
both say a value. Any other bundle: nothing to check, nothing said."""

from __future__ import annotations

from collections.abc import Iterator

from q9diff.doctor.checks import Context, Hit, Note

FIX = (
    "export the .pte again from one lowering (to_edge_transform_and_lower_to_qnn with the compile spec of"
    " the SoC you build for): the options executorch keeps beside the delegate and the binary it holds"
    " should say the same"
)


def check_compile_spec(ctx: Context) -> Iterator[Hit | Note]:
    """Each disagreement once per distinct (compile spec, binary), naming the delegates that share it."""
    from q9diff.compare.container import alike, container_json, where  # start-up: compare.container

    b = ctx.bundle
    data = container_json(b.file) if b.single_file else None
    if data is None:
        return
    qnn = [d for d in data["delegates"] if d.get("context")]
    groups = alike(qnn)
    found = False
    for group in groups:
        for finding in group[0]["compile_spec_findings"]:
            found = True
            yield Hit(f"{b.name}: {where(group)}", finding, FIX)
    unread = [g for g in groups if g[0]["compile_spec"] is None or g[0]["compile_spec"]["problem"]]
    for group in unread:
        spec = group[0]["compile_spec"]
        why = (
            "it has no qnn_compile_spec" if spec is None else f"its compile spec is unread: {spec['problem']}"
        )
        yield Note(f"{b.name}: {where(group)}", f"not compared: {why}", False)
    if not found and len(unread) < len(groups):
        yield Note(
            b.name,
            "each QNN delegate's compile spec agrees with its binary on soc_model, htp_arch, VTCM,"
            " precision and weight sharing, where both say",
        )
