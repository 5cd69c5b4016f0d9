"""The HTML page and the Markdown of any saved result, chosen by its schema: what `--html` and `--markdown`
write, what `q9diff report` draws from a saved `--json`, and what a notebook shows (`_repr_html_`).

Every renderer reads the result as `--json` saves it (q9diff.present.as_json.as_saved), never the live
objects, so a page drawn now and one drawn later from the saved file are the same page.
"""

from __future__ import annotations

from collections.abc import Callable


def renderers(data: dict) -> tuple[Callable[[], str], Callable[[], str]]:
    """(html, markdown) of a saved result whose shape was checked (or that a command just made)."""
    from q9diff.present import html  # start-up: present.html
    from q9diff.present import saved as s  # start-up: present.saved

    markdown = _Markdown()  # imported where a Markdown report is written, not for every HTML one
    schema = data["schema"]
    if schema == s.DIFF:
        return (lambda: html.render(data)), (lambda: markdown.render(data))
    if schema == s.SET:
        return (lambda: html.render_set(data)), (lambda: markdown.render_set(data))
    if schema == s.VERIFY:
        res = s.verify_result(data)
        from q9diff.present.verify_page import render_verify  # start-up: present.verify_page

        return (lambda: render_verify(res)), (lambda: markdown.render_verify(res))
    if schema == s.TARGET:
        from q9diff.present.pages import render_target  # start-up: present.pages

        return (lambda: render_target(data)), (lambda: markdown.render_target(data))
    if schema == s.LAYERS:
        from q9diff.layers.result import LayersResult  # start-up: layers.result
        from q9diff.present.layers_html import render_layers  # start-up: present.layers_html
        from q9diff.present.layers_markdown import render_layers as layers_markdown  # start-up

        res = LayersResult.from_json(data)
        return (lambda: render_layers(res)), (lambda: layers_markdown(res))
    from q9diff.doctor.result import DoctorResult  # start-up: doctor.result
    from q9diff.present.doctor import render_doctor  # start-up: present.doctor

    result = DoctorResult.from_json(data)
    return (lambda: render_doctor(result)), (lambda: markdown.render_doctor(result))


class _Markdown:
    """q9diff.present.markdown, imported when one of its functions is first looked up."""

    def __getattr__(self, name: str):
        from q9diff.present import markdown  # start-up: present.markdown

        return getattr(markdown, name)


def html_page(data: dict) -> str:
    """The self-contained HTML report of a saved result."""
    return renderers(data)[0]()


def markdown_text(data: dict) -> str:
    """The Markdown report of a saved result."""
    return renderers(data)[1]()
