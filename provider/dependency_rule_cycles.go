package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// A plan refuses a new or changed rule that would close a dependency
// cycle, as the controller would report it (the Acyclic condition,
// CycleDetected), with the same graph: one step from a rule's dependent
// type to each dependency's type, over every rule of the installation. The
// rules are those kcp holds, read through the dep-ctrl export's virtual
// workspaces with the provider's credentials, overlaid with the rules this
// plan creates, changes or deletes: each rule's plan records itself in the
// connection, which every resource of one Terraform run shares.

const (
	// cycleSettle is how long a rule that seems to close a cycle with
	// rules only kcp holds waits for this plan to account for them (one
	// it deletes or changes may be planned a moment later) before it fails.
	cycleSettle = 3 * time.Second
	// rulesFreshFor is how long the rules read from kcp, and what a
	// workspace binds, serve the plans of further rules.
	rulesFreshFor = 10 * time.Second
	// rulesReadTimeout bounds the read of the rules in kcp: a shard that
	// does not answer leaves the check to the controller rather than hold
	// up the plan.
	rulesReadTimeout = 5 * time.Second
)

// ruleSteps are a rule's steps in the cycle graph: from its dependent type
// to the type of each dependency, in order (group resources).
type ruleSteps struct {
	from string
	to   []string
}

// plannedRule is a rule as this plan leaves it: steps is nil when it is
// deleted, or when its types are not known until apply.
type plannedRule struct {
	path, name string
	steps      *ruleSteps
}

func (p plannedRule) key() string { return p.path + "/" + p.name }

// display names the rule in messages: its workspace path and name.
func (p plannedRule) display() string {
	if p.path == "" {
		return p.name + " (in a workspace not known until apply)"
	}
	return p.key()
}

// boundWorkspace is what a plan needs to know about a rule's workspace:
// its logical cluster, and the dep-ctrl export whose rule API it binds.
type boundWorkspace struct {
	cluster string
	export  exportRef
	// err says that the workspace does not exist (yet).
	err error
	at  time.Time
}

type exportRef struct{ path, name string }

// listedRule is a rule read from kcp.
type listedRule struct {
	cluster, name string
	steps         ruleSteps
}

type listedRules struct {
	rules []listedRule
	// err says why the rules could not be read: the plans of other rules
	// do not try again at once.
	err error
	at  time.Time
}

// rulePlans is what one Terraform run plans of rules, and what the plans
// read from kcp about them, shared by the plans of all rules.
type rulePlans struct {
	mu      sync.Mutex
	planned map[string]plannedRule
	// changed is closed, and replaced, whenever planned changes.
	changed    chan struct{}
	workspaces map[string]boundWorkspace
	listed     map[exportRef]listedRules
	paths      map[string]string
}

// plan records what this plan does with a rule: before is the rule as in
// state (nil when new), after as planned (nil when deleted).
func (rp *rulePlans) plan(before, after *plannedRule) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.planned == nil {
		rp.planned = map[string]plannedRule{}
	}
	if before != nil && (after == nil || before.key() != after.key()) {
		rp.planned[before.key()] = plannedRule{path: before.path, name: before.name}
	}
	if after != nil {
		rp.planned[after.key()] = *after
	}
	if rp.changed != nil {
		close(rp.changed)
	}
	rp.changed = make(chan struct{})
}

// snapshot returns the planned rules and a channel closed on the next
// change.
func (rp *rulePlans) snapshot() ([]plannedRule, <-chan struct{}) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.changed == nil {
		rp.changed = make(chan struct{})
	}
	out := make([]plannedRule, 0, len(rp.planned))
	for _, p := range rp.planned {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, rp.changed
}

// plannedRuleOf is m as a node of the cycle graph.
func plannedRuleOf(m *ruleModel) plannedRule {
	p := plannedRule{name: m.Name.ValueString()}
	if !m.WorkspacePath.IsUnknown() {
		p.path = m.WorkspacePath.ValueString()
	}
	if m.Dependent == nil || len(m.Dependencies) == 0 {
		return p
	}
	spec, unknown := m.spec()
	if unknown["spec.dependent.group"] || unknown["spec.dependent.resource"] {
		return p
	}
	steps := ruleSteps{from: groupResource(spec.Dependent.Group, spec.Dependent.Resource)}
	for i, d := range spec.Dependencies {
		at := fmt.Sprintf("spec.dependencies[%d].", i)
		if unknown[at+"group"] || unknown[at+"resource"] {
			return p
		}
		steps.to = append(steps.to, groupResource(d.Group, d.Resource))
	}
	p.steps = &steps
	return p
}

func groupResource(group, resource string) string {
	return schema.GroupResource{Group: group, Resource: resource}.String()
}

// boundWorkspace reads, or recalls, the logical cluster of the workspace at
// p and the export whose rule API it binds (zero when it binds none yet).
func (c *Connection) boundWorkspace(ctx context.Context, p string) (boundWorkspace, error) {
	rp := &c.rulePlans
	rp.mu.Lock()
	w, ok := rp.workspaces[p]
	rp.mu.Unlock()
	if ok && time.Since(w.at) < rulesFreshFor {
		return w, w.err
	}
	info, err := readWorkspace(ctx, c, p)
	var notFound *workspaceNotFoundError
	if errors.As(err, &notFound) {
		// It does not exist before this plan is applied: the plans of
		// the other rules in it need not ask again.
		w = boundWorkspace{err: err, at: time.Now()}
		rp.remember(p, w)
		return w, err
	}
	if err != nil {
		return boundWorkspace{}, err
	}
	w = boundWorkspace{cluster: info.Cluster, at: time.Now()}
	client, err := c.Dynamic(p)
	if err != nil {
		return boundWorkspace{}, err
	}
	list, err := client.Resource(apiBindingsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return boundWorkspace{}, fmt.Errorf("listing the APIBindings of %s: %w", p, err)
	}
	for _, u := range list.Items {
		var b apisv1alpha2.APIBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil || b.Spec.Reference.Export == nil {
			continue
		}
		for _, res := range b.Status.BoundResources {
			if res.Group == v1alpha1.Group && res.Resource == v1alpha1.Resource {
				w.export = exportRef{path: b.Spec.Reference.Export.Path, name: b.Spec.Reference.Export.Name}
				if w.export.path == "" {
					w.export.path = p
				}
			}
		}
	}
	rp.remember(p, w)
	return w, nil
}

func (rp *rulePlans) remember(p string, w boundWorkspace) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.workspaces == nil {
		rp.workspaces = map[string]boundWorkspace{}
	}
	rp.workspaces[p] = w
}

// rulesOf reads the rules of every workspace that binds the export,
// through its virtual workspaces, or recalls them when read less than
// maxAge ago. Rules the API would refuse take no part, as in the
// controller.
func (c *Connection) rulesOf(ctx context.Context, e exportRef, maxAge time.Duration) ([]listedRule, error) {
	rp := &c.rulePlans
	rp.mu.Lock()
	l, ok := rp.listed[e]
	rp.mu.Unlock()
	if ok && time.Since(l.at) < maxAge {
		return l.rules, l.err
	}
	objs, err := c.listRules(ctx, e)
	l = listedRules{err: err, at: time.Now()}
	for _, o := range objs {
		var r v1alpha1.DependencyRule
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, &r); err != nil || len(r.Validate()) > 0 {
			continue
		}
		steps := ruleSteps{from: groupResource(r.Spec.Dependent.Group, r.Spec.Dependent.Resource)}
		for _, d := range r.Spec.Dependencies {
			steps.to = append(steps.to, groupResource(d.Group, d.Resource))
		}
		l.rules = append(l.rules, listedRule{cluster: o.Cluster, name: r.Name, steps: steps})
	}
	rp.mu.Lock()
	if rp.listed == nil {
		rp.listed = map[exportRef]listedRules{}
	}
	rp.listed[e] = l
	rp.mu.Unlock()
	return l.rules, l.err
}

// listRules lists the rules of every workspace that binds the export, on
// every shard, within rulesReadTimeout.
func (c *Connection) listRules(ctx context.Context, e exportRef) ([]process.ShardObject, error) {
	ctx, cancel := context.WithTimeout(ctx, rulesReadTimeout)
	defer cancel()
	home, err := c.Config(e.path)
	if err != nil {
		return nil, err
	}
	vw, err := process.NewVirtualWorkspaces(home, e.name)
	if err != nil {
		return nil, err
	}
	urls, err := vw.URLs(ctx)
	if err != nil {
		return nil, err
	}
	return vw.ListAll(ctx, urls, v1alpha1.GroupVersionResource)
}

// clusterPath names a logical cluster by its workspace path, for messages;
// the cluster name itself when that cannot be read.
func (c *Connection) clusterPath(ctx context.Context, cluster string) string {
	rp := &c.rulePlans
	rp.mu.Lock()
	p, ok := rp.paths[cluster]
	rp.mu.Unlock()
	if ok {
		return p
	}
	p = cluster
	if client, err := c.Dynamic(cluster); err == nil {
		lc, err := client.Resource(logicalClustersGVR).Get(ctx, corev1alpha1.LogicalClusterName, metav1.GetOptions{})
		if err == nil && lc.GetAnnotations()[core.LogicalClusterPathAnnotationKey] != "" {
			p = lc.GetAnnotations()[core.LogicalClusterPathAnnotationKey]
		}
	}
	rp.mu.Lock()
	if rp.paths == nil {
		rp.paths = map[string]string{}
	}
	rp.paths[cluster] = p
	rp.mu.Unlock()
	return p
}

// ruleNode is a rule of the cycle graph: one planned here, or one only kcp
// holds (unplanned).
type ruleNode struct {
	steps     ruleSteps
	display   string
	unplanned bool
	cluster   string
}

// cycleGraph is every rule of self's installation as this plan leaves it,
// by key: the logical cluster and name where the cluster is known, so that
// a rule read from kcp and the same rule planned here are one.
type cycleGraph struct {
	nodes map[string]ruleNode
	self  string
}

// graph assembles the rules of self's installation: those kcp holds (read
// no longer than maxAge ago), overlaid with those this plan creates,
// changes or deletes. Rules of workspaces that bind another export belong
// to another installation and take no part.
func (r *dependencyRuleResource) graph(ctx context.Context, self plannedRule, planned []plannedRule, maxAge time.Duration) cycleGraph {
	g := cycleGraph{nodes: map[string]ruleNode{}}
	var export exportRef
	// unresolved are the names of planned rules whose workspace's cluster
	// is not known: a rule of that name in kcp may be the one planned, so
	// none of them stands.
	unresolved := map[string]bool{}
	keyOf := func(p plannedRule) (string, bool) {
		if p.path == "" {
			unresolved[p.name] = true
			return "path:" + p.key(), true
		}
		w, err := r.conn.boundWorkspace(ctx, p.path)
		var notFound *workspaceNotFoundError
		if errors.As(err, &notFound) {
			// Created by this plan: nothing in kcp to stand for.
			return "path:" + p.key(), true
		}
		if err != nil {
			unresolved[p.name] = true
			return "path:" + p.key(), true
		}
		if w.export != (exportRef{}) && export != (exportRef{}) && w.export != export {
			return "", false
		}
		return w.cluster + "/" + p.name, true
	}
	if self.path != "" {
		if w, err := r.conn.boundWorkspace(ctx, self.path); err == nil {
			export = w.export
		} else {
			tflog.Debug(ctx, "not reading the rules in kcp for the cycle check", map[string]interface{}{"workspace": self.path, "error": err.Error()})
		}
	}
	if export != (exportRef{}) {
		listed, err := r.conn.rulesOf(ctx, export, maxAge)
		if err != nil {
			tflog.Debug(ctx, "not checking for cycles with the rules in kcp: they cannot be read", map[string]interface{}{
				"export": export.path + "/" + export.name, "error": err.Error()})
		}
		for _, l := range listed {
			g.nodes[l.cluster+"/"+l.name] = ruleNode{steps: l.steps, unplanned: true, cluster: l.cluster, display: l.cluster + "/" + l.name}
		}
	}
	for _, p := range planned {
		key, ok := keyOf(p)
		if !ok {
			continue
		}
		if p.key() == self.key() {
			g.self = key
		}
		if p.steps == nil {
			// Deleted, or changed in ways not known until apply: what kcp
			// holds of it now does not stand.
			delete(g.nodes, key)
			continue
		}
		g.nodes[key] = ruleNode{steps: *p.steps, display: p.display()}
	}
	for key, n := range g.nodes {
		if n.unplanned && unresolved[strings.TrimPrefix(key, n.cluster+"/")] {
			delete(g.nodes, key)
		}
	}
	return g
}

// edges are the graph's steps; only, when set, keeps just that dependency
// of self.
func (g cycleGraph) edges(only int, named func(key string) string) []v1alpha1.CycleEdge {
	var out []v1alpha1.CycleEdge
	for key, n := range g.nodes {
		for i, to := range n.steps.to {
			if key == g.self && only >= 0 && i != only {
				continue
			}
			out = append(out, v1alpha1.CycleEdge{Rule: named(key), From: n.steps.from, To: to})
		}
	}
	return out
}

func byKey(key string) string { return key }

// checkCycles fails the plan of self, a new or changed rule, on each
// dependency with which it would close a dependency cycle. A cycle through
// rules that only kcp holds is checked again, for a moment, as the rest of
// this plan is recorded and kcp changes: one of them may be deleted or
// changed by this very plan.
func (r *dependencyRuleResource) checkCycles(ctx context.Context, self plannedRule, diags *diagnostics) {
	if self.steps == nil {
		return
	}
	deadline := time.Now().Add(cycleSettle)
	maxAge := rulesFreshFor
	for {
		planned, changed := r.conn.rulePlans.snapshot()
		g := r.graph(ctx, self, planned, maxAge)
		if g.self == "" {
			return
		}
		c, on := v1alpha1.CycleOf(g.edges(-1, byKey), g.self)
		if !on {
			return
		}
		unplanned := false
		for _, rule := range c.Rules {
			unplanned = unplanned || g.nodes[rule].unplanned
		}
		if !unplanned || time.Now().After(deadline) {
			r.reportCycle(ctx, g, diags)
			return
		}
		select {
		case <-changed:
		case <-time.After(500 * time.Millisecond):
			maxAge = 0
		case <-ctx.Done():
			r.reportCycle(ctx, g, diags)
			return
		}
	}
}

// reportCycle adds an error on each dependency of self that closes a cycle
// by itself, naming the rules on it by workspace path and name.
func (r *dependencyRuleResource) reportCycle(ctx context.Context, g cycleGraph, diags *diagnostics) {
	named := func(key string) string {
		n := g.nodes[key]
		if n.unplanned {
			return r.conn.clusterPath(ctx, n.cluster) + strings.TrimPrefix(key, n.cluster)
		}
		return n.display
	}
	self := named(g.self)
	reported := false
	for i := range g.nodes[g.self].steps.to {
		c, on := v1alpha1.CycleOf(g.edges(i, named), self)
		if !on {
			continue
		}
		reported = true
		var others, unplanned []string
		for _, rule := range c.Rules {
			if rule != self {
				others = append(others, rule)
			}
		}
		for key, n := range g.nodes {
			if n.unplanned && slices.Contains(c.Rules, named(key)) {
				unplanned = append(unplanned, named(key))
			}
		}
		sort.Strings(unplanned)
		word := "rule"
		if len(others) > 1 {
			word = "rules"
		}
		detail := fmt.Sprintf("dependency[%d]: with it, rule %s closes a dependency cycle with %s %s: %s. Objects on a cycle protect "+
			"each other and can only be deleted after setting the skip-protection annotation on one of them, so the controller "+
			"would report CycleDetected and never enforce this rule. Change or remove this dependency, or the other %s, to break the cycle.",
			i, self, word, strings.Join(others, ", "), c.Path, word)
		if len(unplanned) > 0 {
			detail += fmt.Sprintf(" Checked at plan against the rules in kcp now and those this plan creates, changes or deletes; "+
				"if %s is deleted or changed by this apply too, apply that first.", strings.Join(unplanned, " or "))
		}
		diags.AddAttributeError(path.Root("dependency").AtListIndex(i), "DependencyRule closes a dependency cycle", detail)
	}
	if !reported {
		c, _ := v1alpha1.CycleOf(g.edges(-1, named), self)
		diags.AddAttributeError(path.Root("dependency"), "DependencyRule closes a dependency cycle",
			fmt.Sprintf("rule %s closes a dependency cycle: %s. Change or remove a dependency, or another rule on it, to break the cycle.", self, c.Path))
	}
}
