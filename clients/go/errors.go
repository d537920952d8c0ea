package kruntimes

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Stable error codes of the invoke contract (docs/invoke-contract.md) and of this client.
const (
	CodeFunctionFailed           = "FunctionFailed"
	CodeFunctionOutputInvalid    = "FunctionOutputInvalid"
	CodeUnauthenticated          = "Unauthenticated"
	CodeForbidden                = "Forbidden"
	CodeRunNotFound              = "RunNotFound"
	CodeInvocationInFlight       = "InvocationInFlight"
	CodeAuthorizationUnavailable = "AuthorizationUnavailable"
	CodeRunNotReady              = "RunNotReady"
	CodeInvocationTimeout        = "InvocationTimeout"
	CodeInvalidRequest           = "InvalidRequest"
	CodeInvalidInvocationID      = "InvalidInvocationId"
	CodePayloadTooLarge          = "PayloadTooLarge"
	CodeInternal                 = "Internal"
	// CodeTransport: no answer from the gateway (see Error.RequestMayHaveBeenSent).
	CodeTransport = "Transport"
)

// Sources of an error: the user's handler, or the platform (and this client).
const (
	SourceFunction = "function"
	SourcePlatform = "platform"
)

// Reasons of a sandbox tool's FunctionFailed: the prefix of the sandbox handler's message.
const (
	ReasonPathOutsideWorkspace = "PathOutsideWorkspace"
	ReasonInvalidToolCall      = "InvalidToolCall"
	ReasonExecTimeout          = "ExecTimeout"
)

// Error is an invocation that did not return a result.
type Error struct {
	// Code is the stable code of the contract (CodeForbidden, CodeFunctionFailed, ...) or CodeTransport.
	Code    string
	Message string
	// Source is SourceFunction when the user's handler failed, SourcePlatform otherwise.
	Source       string
	InvocationID string
	// HTTPStatus is the gateway's answer; 0 when nothing was answered (refused before
	// sending, or no answer at all).
	HTTPStatus int
	// RequestMayHaveBeenSent (Code CodeTransport only) is false only when the connection
	// or its TLS handshake failed: the request is written after them, so the function
	// certainly did not run. When true the function may have run; this client never
	// repeats it.
	RequestMayHaveBeenSent bool
	// TransportKind (Code CodeTransport only): connect, tls, timeout, connection, response, canceled.
	TransportKind string
	// Reason (a sandbox tool's FunctionFailed only): ReasonPathOutsideWorkspace,
	// ReasonInvalidToolCall or ReasonExecTimeout.
	Reason string
}

func (e *Error) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%s (%s): %s", e.Code, e.Reason, e.Message)
	}
	return e.Code + ": " + e.Message
}

// Sent reports whether the gateway answered (the request certainly reached it).
func (e *Error) Sent() bool { return e.HTTPStatus != 0 }

// Retryable reports whether the function certainly did not run and the same call may
// succeed later: the API server could not be asked (AuthorizationUnavailable), or the
// connection failed before the request was written.
func (e *Error) Retryable() bool {
	return e.Code == CodeAuthorizationUnavailable || (e.Code == CodeTransport && !e.RequestMayHaveBeenSent)
}

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// HasReason reports whether err is a sandbox tool's FunctionFailed with that reason.
func HasReason(err error, reason string) bool {
	e, ok := AsError(err)
	return ok && e.Reason == reason
}

func refused(code, message, invocationID string) *Error {
	return &Error{Code: code, Message: message, Source: SourcePlatform, InvocationID: invocationID}
}

func transport(kind, message, invocationID string, mayHaveBeenSent bool) *Error {
	return &Error{Code: CodeTransport, Message: message, Source: SourcePlatform, InvocationID: invocationID,
		RequestMayHaveBeenSent: mayHaveBeenSent, TransportKind: kind}
}

// errorFromAnswer is the error a gateway answer describes (its JSON error), typed by code and source.
func errorFromAnswer(status int, body []byte, invocationID string) *Error {
	var answer struct {
		InvocationID string `json:"invocationId"`
		Error        *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Source  string `json:"source"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &answer) != nil || answer.Error == nil || answer.Error.Code == "" {
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("HTTP %d without the error body of the invoke contract", status),
			Source: SourcePlatform, InvocationID: invocationID, HTTPStatus: status}
	}
	if answer.InvocationID != "" {
		invocationID = answer.InvocationID
	}
	source := answer.Error.Source
	if source != SourceFunction {
		source = SourcePlatform
	}
	return &Error{Code: answer.Error.Code, Message: answer.Error.Message, Source: source, InvocationID: invocationID, HTTPStatus: status}
}

// toolPrefix is the handler's `kruntimes_sandbox.SandboxError: <Kind>: ...` (any exception type, or none, before the kind).
var toolPrefix = regexp.MustCompile(`^(?:[A-Za-z_][\w.]*: )?(PathOutsideWorkspace|InvalidToolCall|ExecTimeout):`)

// withToolReason sets Reason on a FunctionFailed of the sandbox handler, from the
// exception line of its traceback (never from the tool's output quoted further down).
func withToolReason(e *Error) *Error {
	if e.Code != CodeFunctionFailed || e.Source != SourceFunction {
		return e
	}
	if found := toolPrefix.FindStringSubmatch(raisedText(e.Message)); found != nil {
		e.Reason = found[1]
	}
	return e
}

// raisedText is the exception line of a Python traceback onwards (the first line that is
// neither its header nor indented); a message that is not a traceback as it is.
func raisedText(message string) string {
	lines := strings.Split(message, "\n")
	switch {
	case strings.HasPrefix(message, "..."):
		// The worker keeps the end of a long traceback: its first line is cut anywhere.
		lines = lines[1:]
	case !strings.HasPrefix(message, "Traceback"):
		return message
	}
	for i, line := range lines {
		if line != "" && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "Traceback") {
			return strings.Join(lines[i:], "\n")
		}
	}
	return message
}

// Codes of a SandboxError.
const (
	CodeRuntimeNotExclusive = "RuntimeNotExclusive"
	CodeRuntimeUnreadable   = "RuntimeUnreadable"
	CodeRuntimeNotFound     = "RuntimeNotFound"
	CodeSandboxEnded        = "SandboxEnded"
	CodeSandboxDeleted      = "SandboxDeleted"
	CodeSandboxTimeout      = "SandboxTimeout"
	CodeSandboxClosed       = "SandboxClosed"
	CodeKubernetesAPI       = "KubernetesAPI"
	CodeConfiguration       = "Configuration"
)

// SandboxError is a sandbox session that could not be started or ended.
type SandboxError struct {
	// Code is CodeRuntimeNotExclusive, CodeRuntimeUnreadable, CodeRuntimeNotFound, CodeSandboxEnded, CodeSandboxDeleted,
	// CodeSandboxTimeout, CodeSandboxClosed, CodeKubernetesAPI or CodeConfiguration.
	Code    string
	Message string
	// Run names the sandbox Run once one was created.
	Run string
	// HTTPStatus is the Kubernetes API's answer when it refused (CodeKubernetesAPI).
	HTTPStatus int
	// Phase and Reason: the Run's status when it ended before it became Ready.
	Phase, Reason string
	Err           error
}

func (e *SandboxError) Error() string { return e.Code + ": " + e.Message }

func (e *SandboxError) Unwrap() error { return e.Err }

// AsSandboxError returns the *SandboxError in err's chain, if any.
func AsSandboxError(err error) (*SandboxError, bool) {
	var e *SandboxError
	ok := errors.As(err, &e)
	return e, ok
}
