"""The root of magi_code's coded errors, and the whole error tree drawn once.

A coded error carries one `code` from its package's closed set (a `Literal` where the set is
closed in the type) and nothing else a wire may see: never an exception's text, a path, a
credential, a provider body or the input that caused it. Each face turns the code into its
own answer (an error response, a `run.finished`, an exit status); the codes themselves are
the ones the specs publish, so moving a class in this tree never changes what goes on a wire.

    MagiError                       code: str (each package narrows it)
    ├── ProviderError               providers/base.py: ProviderErrorCode (auth_failed,
    │                               rate_limited, server_error, transport_failed,
    │                               malformed_stream, context_overflow, refused)
    ├── SessionError                sessions/errors.py: SessionCode (busy, stale_session, ...)
    ├── StartupError                runner/startup.py: StartupCode (configuration_invalid,
    │                               provider_unavailable, profile_invalid, mcp_unavailable,
    │                               startup_cancelled, startup_failed); `detail` stays local
    ├── RunFailed                   runner/turn.py: RunFailedCode (content_limit,
    │                               execution_failed)
    ├── RequestRejected             local_agent/errors.py: one of ALL_ERRORS (checked)
    └── McpStartupError             mcp/errors.py: McpStartupCode
        ├── McpUnavailable          mcp_unavailable
        │   └── McpLoginRequired    mcp_unavailable (`server` is for the terminal only)
        └── McpCancelled            startup_cancelled

Uncoded, and caught where they are raised (each becomes a code there or a fixed phrase on a
terminal): providers: SSEError (a reason, read as malformed_stream), ConfigurationInvalid,
SignInFailed, http._Failed (wraps a ProviderError); config: SettingsError, SettingsFileError,
CredentialsError; context: ContextSettingsError, ProfileError, InvalidSkill,
FrontMatterError; tools: ToolInputError (InputErrorCode, for the model), PolicyError and
runner.hooks.HookConfigError (configuration_invalid at startup), GlobError, NotRegularFile,
code_child.ToolError; mcp: DefinitionError (configuration_invalid), LoginFailed,
LoginRequired, CommandError; local_agent: OversizeFrame, UnencodableFrame, OutputFailed,
ChannelFull; runner.turn: OutputUnavailable; client: ErrorResponse, ChildGone.

This module imports nothing: startup's errors are on the path to the `initialize` result.
"""


class MagiError(Exception):
    """A failure with one closed code; the code is all a wire may carry."""

    code: str
