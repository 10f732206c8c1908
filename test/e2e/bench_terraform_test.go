package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// The topology the Terraform benchmark manages.
const (
	tfBenchWorkspaces = 10
	tfBenchRules      = 100
)

// terraformScale is what the Terraform benchmark measured.
type terraformScale struct {
	// applyBase creates the dep-ctrl workspace and export, the RBAC in root
	// and on every shard, and the provider workspaces with their bindings;
	// applyRules then adds the rules and waits until each is enforced.
	applyBase, applyRules, plan, destroy time.Duration
	baseResources, ruleResources, shards int
}

// tfBenchConfig is the benchmark topology: provider workspaces spread over
// the shards, each binding the export, and rules in each of them that
// protect a type of the next one.
var tfBenchConfig = template.Must(template.New("main.tf").Parse(`
terraform {
  required_providers {
    depctrl = { source = "depctrl/depctrl" }
  }
}

provider "depctrl" {
  kubeconfig_path = {{printf "%q" .Kubeconfig}}
}

variable "rules" {
  type    = number
  default = 0
}

locals {
  shards = [{{range $i, $s := .Shards}}{{if $i}}, {{end}}{{printf "%q" $s.Name}}{{end}}]
}

resource "depctrl_workspace" "dep_ctrl" {
  name        = "{{.Prefix}}-depctrl"
  parent_path = "root"
}

resource "depctrl_export" "this" {
  workspace_path = depctrl_workspace.dep_ctrl.path
  runtime_users  = [{{printf "%q" .ControllerUser}}, {{printf "%q" .WebhookUser}}]
}

resource "depctrl_root_rbac" "this" {
  name             = "{{.Prefix}}-workspace-reader"
  controller_users = [{{printf "%q" .ControllerUser}}]
}
{{range $i, $s := .Shards}}
resource "depctrl_shard" "s{{$i}}" {
  name            = {{printf "%q" $s.Name}}
  kubeconfig_path = {{printf "%q" $s.AdminKubeconfig}}
  webhook_users   = [{{printf "%q" $.WebhookUser}}]
  grant_name      = "{{$.Prefix}}-webhook-reader"
}
{{end}}
resource "depctrl_workspace" "provider" {
  count          = {{.Workspaces}}
  name           = "{{.Prefix}}-provider-${count.index}"
  parent_path    = "root"
  shard_selector = { name = local.shards[count.index % length(local.shards)] }
}

resource "depctrl_provider_binding" "this" {
  count          = {{.Workspaces}}
  workspace_path = depctrl_workspace.provider[count.index].path
  export_path    = depctrl_export.this.workspace_path
}

output "dep_ctrl_path" {
  value = depctrl_workspace.dep_ctrl.path
}

# Rule i lives in provider workspace i mod N: its Things reference the
# Widgets of the next workspace. No two rules share a type, so there is no
# cycle.
resource "depctrl_dependency_rule" "this" {
  count          = var.rules
  workspace_path = depctrl_provider_binding.this[count.index % {{.Workspaces}}].workspace_path
  name           = "rule-${count.index}"

  dependent {
    api_export_name = "things"
    group           = "things${count.index}.bench.io"
    version         = "v1"
    kind            = "Thing"
    resource        = "things"
  }

  dependency {
    api_export_ref = { path = depctrl_provider_binding.this[(count.index + 1) % {{.Workspaces}}].workspace_path, name = "widgets" }
    group          = "widgets${count.index}.bench.io"
    version        = "v1"
    resource       = "widgets"
    field_ref      = { path = ".spec.widgetRef.name" }
  }
}
`))

// terraformAtScale applies, re-plans and destroys the benchmark topology
// with the real terraform CLI and the provider built from this tree, with a
// runtime for its dep-ctrl workspace so that every rule is waited for
// until it is enforced.
func terraformAtScale(ctx context.Context, t *testing.T, e *env.Env) terraformScale {
	t.Helper()
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		var err error
		if tf, err = exec.LookPath("terraform"); err != nil {
			t.Fatalf("the Terraform benchmark needs terraform on PATH or TF_ACC_TERRAFORM_PATH: %v", err)
		}
	}
	dir := filepath.Dir(buildCommand(ctx, t, "terraform-provider-depctrl"))
	rc := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"depctrl/depctrl\" = %q\n  }\n  direct {}\n}\n", dir)
	check.Must(t, os.WriteFile(filepath.Join(dir, "dev.tfrc"), []byte(rc), 0o644))
	work := filepath.Join(dir, "topology")
	check.Must(t, os.MkdirAll(work, 0o755))
	f, err := os.Create(filepath.Join(work, "main.tf"))
	check.Must(t, err)
	prefix := "tfbench-" + fmt.Sprint(time.Now().Unix()%100000)
	check.Must(t, tfBenchConfig.Execute(f, map[string]interface{}{
		"Kubeconfig": e.AdminKubeconfig, "Shards": e.Shards, "Prefix": prefix,
		"ControllerUser": env.ControllerUser, "WebhookUser": env.WebhookUser, "Workspaces": tfBenchWorkspaces,
	}))
	check.Must(t, f.Close())

	command := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, tf, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+filepath.Join(dir, "dev.tfrc"), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
		return cmd
	}
	var transcript strings.Builder
	defer func() { runtimetest.KeepLog(t, "terraform.log", []byte(transcript.String())) }()
	run := func(args ...string) time.Duration {
		t.Helper()
		start := time.Now()
		cmd := command(args...)
		out := &stampedWriter{start: start}
		cmd.Stdout, cmd.Stderr = out, out
		err := cmd.Run()
		took := time.Since(start)
		fmt.Fprintf(&transcript, "== %s terraform %s (%s)\n%s", start.UTC().Format("15:04:05.000"), strings.Join(args, " "), took.Round(time.Millisecond), out.String())
		if err != nil {
			t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, runtimetest.Tail(out.String(), 40))
		}
		t.Logf("terraform %s: %s", strings.Join(args, " "), took.Round(time.Millisecond))
		return took
	}
	rules := fmt.Sprintf("rules=%d", tfBenchRules)
	var s terraformScale
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			// ctx may be over: a fresh one, so that nothing is left behind.
			cmd := exec.Command(tf, "destroy", "-auto-approve", "-input=false", "-no-color", "-var", rules)
			cmd.Dir, cmd.Env = work, command().Env
			_ = cmd.Run()
		}
	})
	s.applyBase = run("apply", "-auto-approve", "-input=false", "-no-color")
	s.baseResources = 3 + len(e.Shards) + 2*tfBenchWorkspaces
	s.shards = len(e.Shards)
	out, err := command("output", "-raw", "dep_ctrl_path").Output()
	check.Must(t, err)
	rt := runtimetest.Start(ctx, t, e, strings.TrimSpace(string(out)))
	createBenchExports(ctx, t, e, prefix)
	s.applyRules = run("apply", "-auto-approve", "-input=false", "-no-color", "-var", rules)
	logControllerLoad(ctx, t, rt.ControllerMetricsURL)
	s.ruleResources = tfBenchRules
	// -detailed-exitcode fails the run when the plan is not empty.
	s.plan = run("plan", "-detailed-exitcode", "-input=false", "-no-color", "-var", rules)
	s.destroy = run("destroy", "-auto-approve", "-input=false", "-no-color", "-var", rules)
	destroyed = true
	return s
}

// TestBenchmarkTerraform runs only the Terraform part of the benchmark,
// printing its figures: DEPCTRL_BENCH_TERRAFORM=1 go test -run TestBenchmarkTerraform ./test/e2e/
func TestBenchmarkTerraform(t *testing.T) {
	benchOnly(t, "DEPCTRL_BENCH_TERRAFORM", "make bench runs it as part of TestBenchmark")
	ctx := testContext(t, 30*time.Minute)
	s := terraformAtScale(ctx, t, env.ForTest(t, env.TwoShards))
	t.Logf("%+v", s)
}

// createBenchExports creates, in each provider workspace, the exports the
// rules of tfBenchConfig name: "things", serving the dependent types of
// the rules that live there, and "widgets", serving the types the rules of
// the workspace before it protect. A rule whose types no export serves is
// never Ready, and its apply would wait until it timed out.
func createBenchExports(ctx context.Context, t *testing.T, e *env.Env, prefix string) {
	t.Helper()
	things := make([][]fixtures.APIType, tfBenchWorkspaces)
	widgets := make([][]fixtures.APIType, tfBenchWorkspaces)
	for i := range tfBenchRules {
		w := i % tfBenchWorkspaces
		things[w] = append(things[w], fixtures.APIType{Group: fmt.Sprintf("things%d.bench.io", i), Resource: "things", Kind: "Thing"})
		next := (i + 1) % tfBenchWorkspaces
		widgets[next] = append(widgets[next], fixtures.APIType{Group: fmt.Sprintf("widgets%d.bench.io", i), Resource: "widgets", Kind: "Widget"})
	}
	for w := range tfBenchWorkspaces {
		cfg, err := e.AdminConfig(fmt.Sprintf("root:%s-provider-%d", prefix, w))
		check.Must(t, err)
		check.Must(t, fixtures.ApplyYAML(ctx, cfg, fixtures.NamedExportYAML("things", things[w]...)+"---\n"+fixtures.NamedExportYAML("widgets", widgets[w]...)))
	}
}

// logControllerLoad logs what the controller did so far: its runs by phase
// and its requests to kcp, with the time they waited for its rate limiter.
func logControllerLoad(ctx context.Context, t *testing.T, metricsURL string) {
	t.Helper()
	for _, line := range metricLines(ctx, t, metricsURL) {
		for _, prefix := range []string{"depctrl_controller_sync_duration_seconds_sum", "depctrl_controller_sync_duration_seconds_count", "rest_client_requests_total", "rest_client_rate_limiter_duration_seconds_sum", "rest_client_rate_limiter_duration_seconds_count"} {
			if strings.HasPrefix(line, prefix) {
				t.Logf("controller: %s", line)
			}
		}
	}
}

// stampedWriter keeps a command's output with each line prefixed by the
// time since start, so that a kept transcript (runtimetest.KeepLogsEnv)
// lines up with the runtime's logs.
type stampedWriter struct {
	start   time.Time
	mu      sync.Mutex
	buf     strings.Builder
	partial bool
}

func (w *stampedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range strings.SplitAfter(string(p), "\n") {
		if line == "" {
			continue
		}
		if !w.partial {
			fmt.Fprintf(&w.buf, "%8.3fs ", time.Since(w.start).Seconds())
		}
		w.buf.WriteString(line)
		w.partial = !strings.HasSuffix(line, "\n")
	}
	return len(p), nil
}

func (w *stampedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
