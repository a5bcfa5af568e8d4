"""The root of magi_code's coded errors, and the whole error tree drawn once.

A coded error carries one `code` from its package's closed set (a `Literal` where the set is
closed in the type) and nothing else a wire may see: never an exception's text, a path, a
credential, a provider body or the input that caused it. Each face turns the code into its
own answer (an error response, a `run.finished`, an exit status); the codes themselves are
the ones the specs publish, so moving a class in this tree never changes what goes on a wire.

    MagiError                       code: str (each package narrows it to a Literal)
    ├── ProviderError               providers/base.py: ProviderErrorCode (auth_failed,
    │                               rate_limited, server_error, transport_failed,
    │                               malformed_stream, context_overflow, refused)
    ├── SSEError                    providers/sse.py: malformed_stream (`reason` says how)
    ├── ConfigurationInvalid        providers/registry.py: configuration_invalid
    ├── SignInFailed                providers/signin.py: sign_in_failed
    ├── ConfigError                 config/__init__.py: ConfigCode
    │   ├── SettingsError           configuration_invalid (config/settings.py)
    │   │   └── ModelUnknown        configuration_invalid: a model its provider does not offer
    │   ├── SettingsFileError       settings_file_failed (config/settings_file.py)
    │   └── CredentialsError        credentials_failed (config/credentials.py)
    ├── ContextError                context/__init__.py: ContextCode
    │   ├── ContextSettingsError    configuration_invalid (context/loader.py)
    │   ├── ProfileError            profile_invalid (context/profiles.py)
    │   ├── InvalidSkill            skill_invalid (context/skills.py; also a ValueError)
    │   └── FrontMatterError        front_matter_invalid (context/frontmatter.py; ValueError)
    ├── ToolsError                  tools/__init__.py: ToolsCode
    │   ├── ToolInputError          InputErrorCode, for the model (tools/base.py; ValueError)
    │   ├── PolicyError             configuration_invalid (tools/policy.py; ValueError)
    │   ├── GlobError               glob_invalid (tools/globs.py; ValueError)
    │   ├── SandboxError            configuration_invalid (tools/sandbox/settings.py)
    │   └── SandboxUnavailable      sandbox_unavailable (tools/sandbox/modes.py)
    ├── SessionError                sessions/errors.py: SessionCode (busy, stale_session, ...)
    ├── StartupError                runner/startup.py: StartupCode (configuration_invalid,
    │                               provider_unavailable, profile_invalid, mcp_unavailable,
    │                               startup_cancelled, startup_failed); `detail` stays local
    ├── RunFailed                   runner/turn.py: RunFailedCode (content_limit,
    │                               execution_failed)
    ├── HookConfigError             runner/hooks.py: configuration_invalid (also a ValueError)
    ├── RequestRejected             local_agent/errors.py: one of ALL_ERRORS (checked)
    ├── McpStartupError             mcp/errors.py: McpStartupCode
    │   ├── McpUnavailable          mcp_unavailable
    │   │   └── McpLoginRequired    mcp_unavailable (`server` is for the terminal only)
    │   └── McpCancelled            startup_cancelled
    ├── DefinitionError             mcp/errors.py: configuration_invalid (also a ValueError)
    └── LaunchError                 mission_control/driver.py: a StartupCode, and `detail`
                                    and `explain()` for the terminal

Uncoded, and caught where they are raised (control flow or a transport's own condition,
never a failure a wire reports by code): providers: requests._Failed (wraps a ProviderError),
client.TransportError and client.InvalidURL (requests.py reads them as transport_failed and
refused), http1.ProtocolError (client reads it as a TransportError), origins.Unprocessed
(a ConnectionError: the request is worth one new connection), network.NetworkFailure (an
OSError: a proxy or certificate the user must fix; its sentence becomes the TransportError's);
tools: NotRegularFile and ProtectedFile (OSErrors: not a regular file; a hard link to a
protected one), images.ImageRefused (a ValueError: an image no model is sent; its word and
sentence become the call's failure, or a face's refusal of an attachment),
web_fetch.FetchRefused (the fetch stops there: its word and sentence become the call's
failure), sandbox.spawn.SandboxFailed (an OSError: the child could not enter its sandbox; the
call fails), code_child.ToolError (what a Code Mode program catches);
mcp: LoginFailed, LoginRequired, CommandError (a line and an exit status), NotSent (a prompt
command or an `@server:uri` mention could not be had: the prompt is not sent); a2a:
agents.AgentDefinitionError and serving.ServeSettingsError (ValueErrors: a startup's
configuration_invalid, or exit 2 of `a2a serve`, with the sentence), remote.RemoteFailure (the
remote agent's call fails with its word and sentence); local_agent:
OversizeFrame, UnencodableFrame, OutputFailed, ChannelFull; runner.turn: OutputUnavailable;
client: ErrorResponse, ChildGone; context: confined.Refused (an OSError: a file outside its
root, or not a regular file; a notice names it); records: FrozenRecordError (an AttributeError, as
dataclasses' FrozenInstanceError); mission_control.console: Quit; arguments: UsageError (exit 2,
its message for the terminal); acp: MessageTooLarge, UnsupportedContent (answered by the
ACP SDK's own error codes).

This module imports nothing: startup's errors are on the path to the `initialize` result.
"""


class MagiError(Exception):
    """A failure with one closed code; the code is all a wire may carry."""

    code: str
