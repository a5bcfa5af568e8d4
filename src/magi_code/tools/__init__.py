"""Built-in tools, the permission policy, the approval broker and summary redaction.

Nothing is imported here: the runner imports the modules it needs (`tools.builtin`,
`tools.policy`, `tools.approvals`), and `serve --stdio` pays for none of them at start.
"""
