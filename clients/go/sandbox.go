package kruntimes

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// SandboxHandler is the stock sandbox handler shipped with the Python Runtime Server.
	SandboxHandler = "kruntimes_sandbox:handle"
	// SandboxSource is the Run's source when the stock handler is used (a Run needs one).
	SandboxSource           = "from kruntimes_sandbox import handle\n"
	DefaultIdleTimeout      = 600 * time.Second
	DefaultTTLAfterFinished = 600 * time.Second
	DefaultReadyTimeout     = 180 * time.Second
	DefaultCloseTimeout     = 60 * time.Second
	// registrationCleanupFinalizer is held until the Run's Pod-local registration (its workspace) is released.
	registrationCleanupFinalizer = "kruntimes.io/registration-cleanup"
	// maxWatches bounds the watches of one wait (the server ends each at its timeout, or with 410 Gone).
	maxWatches = 100
)

var (
	runs     = schema.GroupVersionResource{Group: "kruntimes.io", Version: "v1alpha1", Resource: "runs"}
	runtimes = schema.GroupVersionResource{Group: "kruntimes.io", Version: "v1alpha1", Resource: "runtimes"}
)

// SandboxOptions say where the sandbox runs and how the session reaches it.
type SandboxOptions struct {
	Namespace string
	Runtime   string
	// Exclusive refuses (CodeRuntimeNotExclusive, nothing created) a Runtime whose
	// spec.runs is not 1; without it such a Runtime gives a Warning. Scheduling is unchanged.
	Exclusive bool
	// IdleTimeout ends the Run after this long without a tool call, so that a sandbox
	// whose agent died ends by itself; zero: DefaultIdleTimeout, negative: none.
	IdleTimeout time.Duration
	// TTLAfterFinished removes a Run that ended without Close; zero: DefaultTTLAfterFinished, negative: none.
	TTLAfterFinished time.Duration
	// InvocationTimeout is the Run's timeout of one tool call; zero: the platform's (60 s).
	InvocationTimeout time.Duration
	// ReadyTimeout and CloseTimeout bound the waits for Ready and for the Run to be gone.
	ReadyTimeout, CloseTimeout time.Duration
	// Config reaches the Kubernetes API; nil: ConfigFromEnvironment.
	Config *rest.Config
	// Token authenticates tool calls at the gateway; empty: Config's bearer token.
	Token string
	// Gateway and CAFile as in InvokeOptions.
	Gateway, CAFile string
	// Handler and Source replace the stock sandbox handler by one that answers the same tools.
	Handler, Source string
}

// Warning is something the caller should know that does not stop the session.
type Warning struct {
	Code    string
	Message string
}

// Sandbox is one sandbox Run, Ready, and one kept-open HTTPS connection to its gateway.
// Its methods may be called from one goroutine at a time: a function Run serves one
// invocation at a time.
type Sandbox struct {
	opts      SandboxOptions
	api       dynamic.ResourceInterface
	token     string
	name      string
	uid       types.UID
	run       *unstructured.Unstructured
	client    *http.Client
	target    string
	mu        sync.Mutex
	ended     bool
	callLimit time.Duration
}

// ConfigFromEnvironment is a Pod's ServiceAccount in a Pod, otherwise the current context
// of the kubeconfig ($KUBECONFIG, then ~/.kube/config).
func ConfigFromEnvironment() (*rest.Config, error) {
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBECONFIG") == "" {
		if config, err := rest.InClusterConfig(); err == nil {
			return config, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// NewSandbox creates a sandbox Run (generateName sandbox-) on opts.Runtime and waits,
// with a watch bounded by ReadyTimeout, until it is Ready. The warnings say what the
// caller should know (a Runtime whose runs is not 1). A start that fails removes the Run.
func NewSandbox(ctx context.Context, opts SandboxOptions) (*Sandbox, []Warning, error) {
	opts = withDefaults(opts)
	config := opts.Config
	if config == nil {
		var err error
		if config, err = ConfigFromEnvironment(); err != nil {
			return nil, nil, &SandboxError{Code: CodeConfiguration, Message: fmt.Sprintf("no Kubernetes API configuration: %v", err), Err: err}
		}
	}
	token := opts.Token
	if token == "" {
		token = config.BearerToken
		if token == "" && config.BearerTokenFile != "" {
			data, err := os.ReadFile(config.BearerTokenFile)
			if err != nil {
				return nil, nil, &SandboxError{Code: CodeConfiguration, Message: fmt.Sprintf("reading the bearer token file: %v", err), Err: err}
			}
			token = string(trimSpace(data))
		}
	}
	if !validToken.MatchString(token) {
		return nil, nil, &SandboxError{Code: CodeConfiguration, Message: "the gateway needs a bearer token: the configuration has none (set SandboxOptions.Token)"}
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, nil, &SandboxError{Code: CodeConfiguration, Message: err.Error(), Err: err}
	}
	warnings, err := checkRuntime(ctx, client, opts)
	if err != nil {
		return nil, nil, err
	}
	s := &Sandbox{opts: opts, api: client.Resource(runs).Namespace(opts.Namespace), token: token, callLimit: DefaultTimeout}
	if opts.InvocationTimeout > 0 {
		s.callLimit = opts.InvocationTimeout + 10*time.Second
	}
	created, err := s.api.Create(ctx, s.runObject(), metav1.CreateOptions{})
	if err != nil {
		return nil, nil, apiError(err, fmt.Sprintf("creating a sandbox Run on Runtime %s/%s", opts.Namespace, opts.Runtime), "")
	}
	s.run, s.name, s.uid = created, created.GetName(), created.GetUID()
	if err := s.open(ctx); err != nil {
		// The Run is this session's: it never outlives a start that failed.
		if cleanup := s.remove(context.WithoutCancel(ctx)); cleanup != nil {
			return nil, warnings, errors.Join(err, fmt.Errorf("and the sandbox Run %s was not removed: %w", s.name, cleanup))
		}
		return nil, warnings, err
	}
	return s, warnings, nil
}

func withDefaults(opts SandboxOptions) SandboxOptions {
	defaults := []struct {
		value    *time.Duration
		fallback time.Duration
	}{
		{&opts.IdleTimeout, DefaultIdleTimeout}, {&opts.TTLAfterFinished, DefaultTTLAfterFinished},
		{&opts.ReadyTimeout, DefaultReadyTimeout}, {&opts.CloseTimeout, DefaultCloseTimeout},
	}
	for _, d := range defaults {
		if *d.value == 0 {
			*d.value = d.fallback
		}
	}
	if opts.Handler == "" {
		opts.Handler, opts.Source = SandboxHandler, SandboxSource
	}
	return opts
}

func checkRuntime(ctx context.Context, client dynamic.Interface, opts SandboxOptions) ([]Warning, error) {
	runtime, err := client.Resource(runtimes).Namespace(opts.Namespace).Get(ctx, opts.Runtime, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &SandboxError{Code: CodeRuntimeNotFound, Message: fmt.Sprintf("no Runtime %s/%s", opts.Namespace, opts.Runtime), HTTPStatus: 404, Err: err}
	}
	if err != nil {
		// Creating a Run needs no get on its Runtime: unchecked, the session goes on unless Exclusive.
		message := fmt.Sprintf("cannot read Runtime %s/%s to check its runs (%v)", opts.Namespace, opts.Runtime, err)
		if opts.Exclusive {
			unreadable := apiError(err, message+"; Exclusive refuses, nothing was created", "")
			unreadable.Code, unreadable.Message = CodeRuntimeUnreadable, message+"; Exclusive refuses, nothing was created"
			return nil, unreadable
		}
		return []Warning{{Code: CodeRuntimeUnreadable, Message: message + "; not checked"}}, nil
	}
	perPod, found, _ := unstructured.NestedInt64(runtime.Object, "spec", "runs")
	if !found || perPod == 1 {
		return nil, nil
	}
	message := fmt.Sprintf("Runtime %s/%s has runs: %d: the sandbox shares its Pod with up to %d other Runs (its workspace stays its own); "+
		"a Runtime with runs: 1 gives it a Pod of its own", opts.Namespace, opts.Runtime, perPod, perPod-1)
	if opts.Exclusive {
		return nil, &SandboxError{Code: CodeRuntimeNotExclusive, Message: message + "; Exclusive refuses it, nothing was created"}
	}
	return []Warning{{Code: CodeRuntimeNotExclusive, Message: message}}, nil
}

func (s *Sandbox) runObject() *unstructured.Unstructured {
	function := map[string]any{"handler": s.opts.Handler}
	if s.opts.IdleTimeout > 0 {
		function["idleTimeoutSeconds"] = int64(s.opts.IdleTimeout / time.Second)
	}
	if s.opts.InvocationTimeout > 0 {
		function["invocationTimeoutSeconds"] = int64(s.opts.InvocationTimeout / time.Second)
	}
	spec := map[string]any{"runtime": s.opts.Runtime, "source": map[string]any{"inline": s.opts.Source}, "mode": map[string]any{"function": function}}
	if s.opts.TTLAfterFinished > 0 {
		spec["ttlSecondsAfterFinished"] = int64(s.opts.TTLAfterFinished / time.Second)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
		"metadata": map[string]any{"generateName": "sandbox-"},
		"spec":     spec,
	}}
}

// open waits until the Run is Ready and makes the client of its gateway.
func (s *Sandbox) open(ctx context.Context) error {
	ready, err := s.watch(ctx, s.run, s.opts.ReadyTimeout, fmt.Sprintf("Ready within %s", s.opts.ReadyTimeout), s.decideReady)
	if err != nil {
		return err
	}
	endpoint, err := EndpointFromRun(ready)
	if err != nil {
		return err
	}
	if s.target, err = resolveTarget(endpoint, s.opts.Gateway, s.token, ""); err != nil {
		return err
	}
	s.client, err = NewHTTPClient(endpoint, s.opts.CAFile)
	return err
}

// Name is the sandbox Run's name.
func (s *Sandbox) Name() string { return s.name }

// UID is the sandbox Run's UID.
func (s *Sandbox) UID() types.UID { return s.uid }

// Run is the sandbox Run as last seen.
func (s *Sandbox) Run() *unstructured.Unstructured { return s.run }

// ExecRequest is one exec tool call: exactly one of Command (sh -c) and Python (python3 -c).
type ExecRequest struct {
	Command string
	Python  string
	// TimeoutSeconds is the command's time limit; zero: the handler's default (30 s).
	TimeoutSeconds int
}

// ExecResult is what a command did; a non-zero exit is a result, not an error.
type ExecResult struct {
	ExitCode        int    `json:"exitCode"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdoutTruncated"`
	StderrTruncated bool   `json:"stderrTruncated"`
	DurationMs      int64  `json:"durationMs"`
	InvocationID    string `json:"-"`
}

// FileEntry is one entry of a workspace directory.
type FileEntry struct {
	Name string `json:"name"`
	// Type is file, dir or symlink.
	Type string `json:"type"`
	Size int64  `json:"size"`
}

// Exec runs a command in the workspace. An overrun is an *Error with ReasonExecTimeout
// (the sandbox stays Ready).
func (s *Sandbox) Exec(ctx context.Context, request ExecRequest) (*ExecResult, error) {
	arguments := map[string]any{}
	switch {
	case (request.Command == "") == (request.Python == ""):
		return nil, refused(CodeInvalidRequest, "exec needs exactly one of Command and Python", "")
	case request.Command != "":
		arguments["command"] = request.Command
	default:
		arguments["python"] = request.Python
	}
	if request.TimeoutSeconds > 0 {
		arguments["timeoutSeconds"] = request.TimeoutSeconds
	}
	var result ExecResult
	invocation, err := s.callInto(ctx, "exec", arguments, &result)
	if err != nil {
		return nil, err
	}
	result.InvocationID = invocation.InvocationID
	return &result, nil
}

// WriteFile writes content to path in the workspace (parents created) and returns the bytes written.
func (s *Sandbox) WriteFile(ctx context.Context, path string, content []byte) (int64, error) {
	var result struct {
		Bytes int64 `json:"bytes"`
	}
	_, err := s.callInto(ctx, "write_file", map[string]any{"path": path, "content": base64.StdEncoding.EncodeToString(content), "encoding": "base64"}, &result)
	return result.Bytes, err
}

// ReadFile returns the file at path in the workspace.
func (s *Sandbox) ReadFile(ctx context.Context, path string) ([]byte, error) {
	var result struct {
		Content string `json:"content"`
	}
	if _, err := s.callInto(ctx, "read_file", map[string]any{"path": path, "encoding": "base64"}, &result); err != nil {
		return nil, err
	}
	content, err := base64.StdEncoding.DecodeString(result.Content)
	if err != nil {
		return nil, refused(CodeInternal, "read_file answered content that is not base64", "")
	}
	return content, nil
}

// ListFiles returns the entries of the directory path in the workspace, sorted by name.
func (s *Sandbox) ListFiles(ctx context.Context, path string) ([]FileEntry, error) {
	var result struct {
		Entries []FileEntry `json:"entries"`
	}
	_, err := s.callInto(ctx, "list_files", map[string]any{"path": path}, &result)
	return result.Entries, err
}

// Call is one tool call as the contract names it: the Invocation, or an *Error (a tool's
// refusal has its Reason). Never retried.
func (s *Sandbox) Call(ctx context.Context, tool string, arguments map[string]any) (*Invocation, error) {
	s.mu.Lock()
	ended, client := s.ended, s.client
	s.mu.Unlock()
	if ended || client == nil {
		return nil, &SandboxError{Code: CodeSandboxClosed, Message: "the sandbox is closed or cancelled", Run: s.name}
	}
	payload := map[string]any{"tool": tool}
	for key, value := range arguments {
		payload[key] = value
	}
	invocationID := uuid.NewString()
	body, err := requestBody(payload, invocationID)
	if err != nil {
		return nil, err
	}
	return post(ctx, client, s.target, s.token, body, invocationID, s.callLimit)
}

func (s *Sandbox) callInto(ctx context.Context, tool string, arguments map[string]any, result any) (*Invocation, error) {
	invocation, err := s.Call(ctx, tool, arguments)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(invocation.Result, result); err != nil {
		return nil, &Error{Code: CodeInternal, Message: fmt.Sprintf("%s answered a result of another shape: %v", tool, err),
			Source: SourcePlatform, InvocationID: invocation.InvocationID, HTTPStatus: http.StatusOK}
	}
	return invocation, nil
}

// Close deletes the Run and waits, bounded by CloseTimeout, until it is gone (its
// finalizer removed, the workspace with it). Closing again does nothing.
func (s *Sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return nil
	}
	s.ended = true
	s.mu.Unlock()
	return s.remove(ctx)
}

// Cancel asks the platform to cancel the Run (spec.cancelRequested) and waits, bounded by
// CloseTimeout, until it ended and its workspace was released; the Run stays, with its status, until its TTL or a delete
// removes it. It returns the ended Run.
func (s *Sandbox) Cancel(ctx context.Context) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return nil, &SandboxError{Code: CodeSandboxClosed, Message: "the sandbox was closed or cancelled", Run: s.name}
	}
	s.ended = true
	s.mu.Unlock()
	s.closeConnections()
	patched, err := s.api.Patch(ctx, s.name, types.MergePatchType, []byte(`{"spec":{"cancelRequested":true}}`), metav1.PatchOptions{})
	if err != nil {
		return nil, apiError(err, fmt.Sprintf("cancelling sandbox Run %s/%s", s.opts.Namespace, s.name), s.name)
	}
	return s.watch(ctx, patched, s.opts.CloseTimeout, fmt.Sprintf("ended within %s", s.opts.CloseTimeout), decideEnded)
}

func (s *Sandbox) closeConnections() {
	if s.client != nil {
		s.client.CloseIdleConnections()
	}
}

func (s *Sandbox) remove(ctx context.Context) error {
	s.closeConnections()
	ctx, cancel := context.WithTimeout(ctx, s.opts.CloseTimeout)
	defer cancel()
	uid := s.uid
	// The UID precondition: never a Run of the same name created after this one was gone.
	err := s.api.Delete(ctx, s.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return apiError(err, fmt.Sprintf("deleting sandbox Run %s/%s", s.opts.Namespace, s.name), s.name)
	}
	current, err := s.api.Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && current.GetUID() != s.uid) {
		return nil
	}
	if err != nil {
		return apiError(err, fmt.Sprintf("reading sandbox Run %s/%s", s.opts.Namespace, s.name), s.name)
	}
	_, err = s.watch(ctx, current, s.opts.CloseTimeout, fmt.Sprintf("gone within %s", s.opts.CloseTimeout), decideGone)
	return err
}

type decision func(eventType watch.EventType, run *unstructured.Unstructured) (*unstructured.Unstructured, error)

var terminalPhases = map[string]bool{"Succeeded": true, "Failed": true, "Timeout": true, "Cancelled": true, "Interrupted": true}

func (s *Sandbox) decideReady(eventType watch.EventType, run *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	s.run = run
	phase, _, _ := unstructured.NestedString(run.Object, "status", "phase")
	reason, _, _ := unstructured.NestedString(run.Object, "status", "reason")
	message, _, _ := unstructured.NestedString(run.Object, "status", "message")
	if eventType == watch.Deleted || run.GetDeletionTimestamp() != nil {
		return nil, &SandboxError{Code: CodeSandboxDeleted, Message: fmt.Sprintf("sandbox Run %s/%s was deleted before it became Ready", s.opts.Namespace, s.name),
			Run: s.name, Phase: phase, Reason: reason}
	}
	if terminalPhases[phase] {
		return nil, &SandboxError{Code: CodeSandboxEnded, Message: fmt.Sprintf("sandbox Run %s/%s ended %s (%s: %s) instead of becoming Ready", s.opts.Namespace, s.name, phase, reason, message),
			Run: s.name, Phase: phase, Reason: reason}
	}
	conditions, _, _ := unstructured.NestedSlice(run.Object, "status", "conditions")
	ready := false
	for _, condition := range conditions {
		if c, ok := condition.(map[string]any); ok && c["type"] == "Ready" && c["status"] == "True" {
			ready = true
		}
	}
	endpoint, _, _ := unstructured.NestedString(run.Object, "status", "endpoint", "url")
	// The endpoint is read once Ready says so (never taken as readiness itself).
	if phase == "Ready" && ready && endpoint != "" {
		return run, nil
	}
	return nil, nil
}

func decideGone(eventType watch.EventType, run *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if eventType == watch.Deleted {
		return run, nil
	}
	return nil, nil
}

func decideEnded(eventType watch.EventType, run *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	phase, _, _ := unstructured.NestedString(run.Object, "status", "phase")
	if eventType == watch.Deleted || (terminalPhases[phase] && !slices.Contains(run.GetFinalizers(), registrationCleanupFinalizer)) {
		return run, nil
	}
	return nil, nil
}

// watch watches this Run from run (its last state seen, decided first) until decide
// returns it or an error, or timeout passes (CodeSandboxTimeout). A watch the server ends
// is started again from the last resourceVersion; one that is too old (410) from a fresh read.
func (s *Sandbox) watch(ctx context.Context, run *unstructured.Unstructured, timeout time.Duration, what string, decide decision) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if decided, err := decide(watch.Added, run); decided != nil || err != nil {
		return decided, err
	}
	last := run
	version := run.GetResourceVersion()
	for range maxWatches {
		if ctx.Err() != nil {
			break
		}
		seconds := int64(time.Until(deadlineOf(ctx)).Seconds()) + 1
		watcher, err := s.api.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + s.name, ResourceVersion: version,
			AllowWatchBookmarks: true, TimeoutSeconds: &seconds})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				decided, fresh, current, err := s.afterTooOld(ctx, last, decide)
				if decided != nil || err != nil {
					return decided, err
				}
				version, last = fresh, current
				continue
			}
			return nil, apiError(err, fmt.Sprintf("watching sandbox Run %s/%s", s.opts.Namespace, s.name), s.name)
		}
		decided, next, restart, err := s.consume(ctx, watcher, version, last, decide)
		watcher.Stop()
		if decided != nil || err != nil {
			return decided, err
		}
		version, last = next, restart
	}
	phase, _, _ := unstructured.NestedString(last.Object, "status", "phase")
	if phase == "" {
		phase = "Pending"
	}
	// Err: the caller's cancellation (context.Canceled) or this wait's deadline.
	return nil, &SandboxError{Code: CodeSandboxTimeout, Message: fmt.Sprintf("sandbox Run %s/%s was not %s (phase %s)", s.opts.Namespace, s.name, what, phase), Run: s.name, Err: ctx.Err()}
}

// consume reads one watch until it ends: what decide returned, or where to start again.
func (s *Sandbox) consume(ctx context.Context, watcher watch.Interface, version string, last *unstructured.Unstructured, decide decision) (*unstructured.Unstructured, string, *unstructured.Unstructured, error) {
	for event := range watcher.ResultChan() {
		switch event.Type {
		case watch.Error:
			status := apierrors.FromObject(event.Object)
			if !apierrors.IsGone(status) && !apierrors.IsResourceExpired(status) {
				return nil, "", nil, apiError(status, fmt.Sprintf("watching sandbox Run %s/%s", s.opts.Namespace, s.name), s.name)
			}
			return s.afterTooOld(ctx, last, decide)
		case watch.Bookmark:
			if object, ok := event.Object.(*unstructured.Unstructured); ok {
				version = object.GetResourceVersion()
			}
		default:
			object, ok := event.Object.(*unstructured.Unstructured)
			if !ok || object.GetUID() != s.uid {
				continue
			}
			version, last = object.GetResourceVersion(), object
			if decided, err := decide(event.Type, object); decided != nil || err != nil {
				return decided, version, last, err
			}
		}
	}
	return nil, version, last, nil
}

// afterTooOld decides on a fresh read after a watch too old to continue (410 Gone): the
// Run as it is now, or its deletion; else where to watch from.
func (s *Sandbox) afterTooOld(ctx context.Context, last *unstructured.Unstructured, decide decision) (*unstructured.Unstructured, string, *unstructured.Unstructured, error) {
	current, err := s.api.Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && current.GetUID() != s.uid) {
		decided, err := decide(watch.Deleted, last)
		return decided, last.GetResourceVersion(), last, err
	}
	if err != nil {
		return nil, "", nil, apiError(err, fmt.Sprintf("reading sandbox Run %s/%s", s.opts.Namespace, s.name), s.name)
	}
	decided, err := decide(watch.Modified, current)
	return decided, current.GetResourceVersion(), current, err
}

func deadlineOf(ctx context.Context) time.Time {
	deadline, _ := ctx.Deadline()
	return deadline
}

func apiError(err error, doing, run string) *SandboxError {
	status := 0
	var statusError apierrors.APIStatus
	if errors.As(err, &statusError) {
		status = int(statusError.Status().Code)
	}
	return &SandboxError{Code: CodeKubernetesAPI, Message: fmt.Sprintf("%s: %v", doing, err), Run: run, HTTPStatus: status, Err: err}
}

func trimSpace(data []byte) []byte {
	for len(data) > 0 && (data[len(data)-1] == '\n' || data[len(data)-1] == ' ' || data[len(data)-1] == '\r') {
		data = data[:len(data)-1]
	}
	return data
}
