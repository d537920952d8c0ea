package kruntimes

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// Sandbox sessions and invocations against a live system: run by
// e2e/test/go-client.int.test.ts, which starts the system and sets KUBECONFIG (a user who
// may read Runtimes, use them, and create, watch, patch and delete Runs), KRT_GATEWAY_URL,
// KRT_GATEWAY_CA_FILE and the KRT_TEST_* variables read here. Without them these tests skip
// (the e2e test refuses a skip).

type live struct {
	namespace, sandboxRuntime, sharedRuntime, otherToken string
}

func liveSystem(t *testing.T) live {
	t.Helper()
	env := live{
		namespace:      os.Getenv("KRT_TEST_NAMESPACE"),
		sandboxRuntime: os.Getenv("KRT_TEST_SANDBOX_RUNTIME"),
		sharedRuntime:  os.Getenv("KRT_TEST_SHARED_RUNTIME"),
		otherToken:     os.Getenv("KRT_TEST_OTHER_TOKEN"),
	}
	if env.namespace == "" || env.sandboxRuntime == "" {
		t.Skip("needs a live system: run through e2e/test/go-client.int.test.ts")
	}
	return env
}

// options of a session as the tests' user, with the stock handler.
func (env live) options(runtime string) SandboxOptions {
	return SandboxOptions{Namespace: env.namespace, Runtime: runtime}
}

func (env live) runs(t *testing.T) dynamic.ResourceInterface {
	t.Helper()
	config, err := ConfigFromEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client.Resource(runs).Namespace(env.namespace)
}

func (env live) sandboxRuns(t *testing.T) []string {
	t.Helper()
	list, err := env.runs(t).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, run := range list.Items {
		if strings.HasPrefix(run.GetName(), "sandbox-") && run.GetDeletionTimestamp() == nil {
			names = append(names, run.GetName())
		}
	}
	return names
}

func mustStart(t *testing.T, opts SandboxOptions) *Sandbox {
	t.Helper()
	sb, warnings, err := NewSandbox(context.Background(), opts)
	if err != nil {
		t.Fatalf("NewSandbox: %v", err)
	}
	if len(warnings) != 0 && opts.Runtime == os.Getenv("KRT_TEST_SANDBOX_RUNTIME") {
		t.Fatalf("runs: 1 warned: %v", warnings)
	}
	t.Cleanup(func() {
		if err := sb.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sb
}

func TestSandboxLife(t *testing.T) {
	env := liveSystem(t)
	ctx := context.Background()
	sb := mustStart(t, env.options(env.sandboxRuntime))
	if !strings.HasPrefix(sb.Name(), "sandbox-") {
		t.Fatalf("name %q", sb.Name())
	}
	run, err := env.runs(t).Get(ctx, sb.Name(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if phase := run.Object["status"].(map[string]any)["phase"]; phase != "Ready" {
		t.Fatalf("phase %v", phase)
	}
	if idle := run.Object["spec"].(map[string]any)["mode"].(map[string]any)["function"].(map[string]any)["idleTimeoutSeconds"]; idle != int64(600) {
		t.Fatalf("idleTimeoutSeconds %v", idle)
	}
	if n, err := sb.WriteFile(ctx, "data/in.csv", []byte("a,b\n1,2\n3,4\n")); err != nil || n != 12 {
		t.Fatalf("WriteFile: %d %v", n, err)
	}
	done, err := sb.Exec(ctx, ExecRequest{Python: "import csv\nrows = list(csv.DictReader(open('data/in.csv')))\n" +
		"open('data/out.txt', 'w').write(str(sum(int(r['b']) for r in rows)))\nprint(len(rows))"})
	if err != nil || done.ExitCode != 0 || done.Stdout != "2\n" || done.InvocationID == "" {
		t.Fatalf("Exec: %+v %v", done, err)
	}
	if out, err := sb.ReadFile(ctx, "data/out.txt"); err != nil || string(out) != "6" {
		t.Fatalf("ReadFile: %q %v", out, err)
	}
	entries, err := sb.ListFiles(ctx, "data")
	if err != nil || len(entries) != 2 || entries[0].Name != "in.csv" || entries[0].Type != "file" || entries[0].Size != 12 {
		t.Fatalf("ListFiles: %+v %v", entries, err)
	}
	failed, err := sb.Exec(ctx, ExecRequest{Command: "echo out; echo err >&2; exit 3"})
	if err != nil || failed.ExitCode != 3 || failed.Stdout != "out\n" || failed.Stderr != "err\n" {
		t.Fatalf("a failing command: %+v %v", failed, err)
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Closed: the Run is gone (its finalizer removed), not merely deleting.
	if _, err := env.runs(t).Get(ctx, sb.Name(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after Close: %v", err)
	}
	if _, err := sb.Exec(ctx, ExecRequest{Command: "true"}); err == nil {
		t.Fatal("a tool call after Close")
	} else if e, ok := AsSandboxError(err); !ok || e.Code != CodeSandboxClosed {
		t.Fatalf("after Close: %v", err)
	}
}

func TestSandboxRefusesPathEscapesAndBadCallsAndBoundsCommands(t *testing.T) {
	env := liveSystem(t)
	ctx := context.Background()
	sb := mustStart(t, env.options(env.sandboxRuntime))
	if _, err := sb.Exec(ctx, ExecRequest{Command: "mkdir -p inside && ln -s /etc outside && ln -s .. up"}); err != nil {
		t.Fatal(err)
	}
	escapes := map[string]func() error{
		"..":                 func() error { _, err := sb.ReadFile(ctx, "../secret"); return err },
		"absolute":           func() error { _, err := sb.ReadFile(ctx, "/etc/hostname"); return err },
		"climbing out":       func() error { _, err := sb.WriteFile(ctx, "inside/../../x", []byte("no")); return err },
		"symlink out":        func() error { _, err := sb.ReadFile(ctx, "outside/hostname"); return err },
		"symlink to parent":  func() error { _, err := sb.ListFiles(ctx, "up"); return err },
		"symlinked dir list": func() error { _, err := sb.ListFiles(ctx, "outside"); return err },
	}
	for name, call := range escapes {
		err := call()
		e, ok := AsError(err)
		if !ok || e.Reason != ReasonPathOutsideWorkspace || e.Code != CodeFunctionFailed || e.Source != SourceFunction || e.HTTPStatus != 500 || e.InvocationID == "" {
			t.Errorf("%s: want PathOutsideWorkspace, got %#v", name, err)
		}
	}
	if _, err := sb.Call(ctx, "format_disk", nil); !HasReason(err, ReasonInvalidToolCall) {
		t.Errorf("an unknown tool: %v", err)
	}
	_, err := sb.Exec(ctx, ExecRequest{Command: "echo started; sleep 30", TimeoutSeconds: 1})
	if e, ok := AsError(err); !ok || e.Reason != ReasonExecTimeout || !strings.Contains(e.Message, "timed out after 1 s") || !strings.Contains(e.Message, "started") {
		t.Fatalf("an overrun: %#v", err)
	}
	// The sandbox stays Ready.
	if done, err := sb.Exec(ctx, ExecRequest{Command: "echo still here"}); err != nil || done.Stdout != "still here\n" {
		t.Fatalf("after the overrun: %+v %v", done, err)
	}
}

func TestSandboxWarnsOnASharedRuntimeAndExclusiveRefuses(t *testing.T) {
	env := liveSystem(t)
	before := env.sandboxRuns(t)
	opts := env.options(env.sharedRuntime)
	opts.Exclusive = true
	_, _, err := NewSandbox(context.Background(), opts)
	if e, ok := AsSandboxError(err); !ok || e.Code != CodeRuntimeNotExclusive || !strings.Contains(e.Message, "runs: 2") {
		t.Fatalf("Exclusive on runs: 2: %v", err)
	}
	missing := env.options("no-such-runtime")
	if _, _, err := NewSandbox(context.Background(), missing); err == nil {
		t.Fatal("a Runtime that does not exist")
	} else if e, ok := AsSandboxError(err); !ok || e.Code != CodeRuntimeNotFound {
		t.Fatalf("a Runtime that does not exist: %v", err)
	}
	if after := env.sandboxRuns(t); len(after) != len(before) {
		t.Fatalf("a refused session created a Run: %v -> %v", before, after)
	}
	opts.Exclusive = false
	sb, warnings, err := NewSandbox(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sb.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	if len(warnings) != 1 || warnings[0].Code != CodeRuntimeNotExclusive || !strings.Contains(warnings[0].Message, "runs: 2") {
		t.Fatalf("warnings %v", warnings)
	}
	if done, err := sb.Exec(context.Background(), ExecRequest{Command: "echo shared"}); err != nil || done.Stdout != "shared\n" {
		t.Fatalf("%+v %v", done, err)
	}
}

func TestSandboxCancelEndsTheRunWhichStays(t *testing.T) {
	env := liveSystem(t)
	ctx := context.Background()
	opts := env.options(env.sandboxRuntime)
	opts.TTLAfterFinished = 30 * time.Second
	sb := mustStart(t, opts)
	ended, err := sb.Cancel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if phase := ended.Object["status"].(map[string]any)["phase"]; phase != "Cancelled" {
		t.Fatalf("phase %v", phase)
	}
	run, err := env.runs(t).Get(ctx, sb.Name(), metav1.GetOptions{})
	if err != nil || run.Object["spec"].(map[string]any)["ttlSecondsAfterFinished"] != int64(30) {
		t.Fatalf("the cancelled Run: %v %v", run, err)
	}
	if _, err := sb.Exec(ctx, ExecRequest{Command: "true"}); err == nil {
		t.Fatal("a tool call after Cancel")
	}
	if err := env.runs(t).Delete(ctx, sb.Name(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestInvokeErrorsAreTyped(t *testing.T) {
	env := liveSystem(t)
	ctx := context.Background()
	sb := mustStart(t, env.options(env.sandboxRuntime))
	endpoint, err := EndpointFromRun(sb.Run())
	if err != nil {
		t.Fatal(err)
	}
	answer, err := Invoke(ctx, endpoint, map[string]any{"tool": "exec", "command": "echo direct"}, InvokeOptions{Token: sb.token, InvocationID: "go-direct-1"})
	if err != nil || answer.InvocationID != "go-direct-1" || !strings.Contains(string(answer.Result), `"stdout":"direct\n"`) {
		t.Fatalf("a direct invoke: %+v %v", answer, err)
	}
	cases := []struct {
		name, token, url, code string
		status                 int
	}{
		{"a token the API server does not know", "not-a-token", endpoint.URL, CodeUnauthenticated, 401},
		{"a caller who may not get the Run", env.otherToken, endpoint.URL, CodeForbidden, 403},
		{"a UID that is no Run", sb.token, strings.Replace(endpoint.URL, string(sb.UID()), "00000000-0000-0000-0000-000000000000", 1), CodeRunNotFound, 404},
	}
	for _, c := range cases {
		_, err := Invoke(ctx, Endpoint{URL: c.url, CABundle: endpoint.CABundle}, map[string]any{"tool": "list_files", "path": "."}, InvokeOptions{Token: c.token, InvocationID: "go-" + c.code})
		e, ok := AsError(err)
		if !ok || e.Code != c.code || e.HTTPStatus != c.status || e.Source != SourcePlatform || e.InvocationID != "go-"+c.code {
			t.Errorf("%s: got %#v", c.name, err)
		}
	}
	_, err = Invoke(ctx, endpoint, map[string]any{"tool": "read_file", "path": "../x"}, InvokeOptions{Token: sb.token})
	if e, ok := AsError(err); !ok || e.Code != CodeFunctionFailed || e.Source != SourceFunction || e.Reason != ReasonPathOutsideWorkspace {
		t.Errorf("a function failure: %#v", err)
	}
	// Deleted behind the session's back: a typed platform answer, not a transport failure.
	if err := env.runs(t).Delete(ctx, sb.Name(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A call in the moment before runtimed's cache saw the deletion is still served (a loaded
	// run's was): call until refused, at most 10 s.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err = sb.Exec(ctx, ExecRequest{Command: "true"}); err != nil || time.Now().After(deadline) {
			break
		}
	}
	if e, ok := AsError(err); !ok || (e.Code != CodeRunNotReady && e.Code != CodeRunNotFound) || !e.Sent() || e.Source != SourcePlatform {
		t.Errorf("a deleted sandbox: %#v", err)
	}
}
