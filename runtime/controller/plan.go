package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// RuleInput is what planning needs of one DependencyRule.
type RuleInput struct {
	// Key is "<cluster>/<name>".
	Key       string
	Dependent schema.GroupVersionResource
	// DependentKind and DependentExport are spec.dependent.kind and
	// spec.dependent.apiExportName.
	DependentKind   string
	DependentExport string
	Dependencies    []DependencyInput
	// Invalid, when set, says why the rule's spec cannot be acted on.
	Invalid string
	// UID, Generation and IndexEpoch (status.indexEpoch) enter the stamp
	// of the types the rule protects (package settle).
	UID        string
	Generation int64
	IndexEpoch string
}

// DependencyInput is one protected type of a rule.
type DependencyInput struct {
	ExportPath string
	ExportName string
	GVR        schema.GroupVersionResource
	FieldPath  string
}

// Binding is how a workspace bound the dep-ctrl export, as seen through the
// virtual workspace.
type Binding struct {
	URL string
	// ClaimAccepted says the workspace accepted the permission claim on
	// validatingwebhookconfigurations, without which nothing can be
	// installed there.
	ClaimAccepted bool
	// EventsAccepted says the workspace accepted the claim on Events, so
	// the controller may report on the rules there with Events.
	EventsAccepted bool
	// IndexClaimAccepted says the workspace accepted the claim on
	// mutatingwebhookconfigurations, so the controller may install the
	// reference index webhook next to the rules there.
	IndexClaimAccepted bool
	// TypesClaimAccepted says the workspace accepted the read-only claims
	// on apiexports and apiresourceschemas, so the controller may check
	// rules against the exports there.
	TypesClaimAccepted bool
}

// Outcome is the verdict on one aspect of a rule.
type Outcome struct {
	OK bool
	// Unknown says the verdict could not be reached (the condition is
	// Unknown rather than False).
	Unknown bool
	// Keep says a verdict already reached for the rule's generation
	// stands: the outcome comes from a failure to read that may pass.
	Keep    bool
	Reason  string
	Message string
}

// RulePlan is what the controller concluded about one rule.
type RulePlan struct {
	Resolved Outcome
	// Served says whether the exports serve the types the rule names.
	Served    Outcome
	Installed Outcome
	Acyclic   Outcome
	Indexed   Outcome
	// Bridged names a type the rule protects whose configurations still
	// accept a stamp of the rules before it (settle.Bridges), "" when
	// none does: objects settled under that stamp skip the webhook without
	// a proof under this rule, so it is not Ready yet. Sync fills it in.
	Bridged string
	// Targets are the logical clusters whose webhook protects this rule.
	Targets []string
	// IndexTarget is the logical cluster whose reference index
	// configuration covers this rule's dependent type, if any.
	IndexTarget string
	// IndexEpoch is the UID of that configuration once it is in place
	// (status.indexEpoch), empty otherwise. Sync fills it in.
	IndexEpoch string
	// Unread says, by what could not be read (UnreadWorkspace,
	// UnreadExport), why this run could not read what the rule needs; nil
	// when it could. Such a rule keeps what is installed for it, and the
	// controller is not ready while any rule has it.
	Unread map[string]string
}

// What a run may fail to read for a rule (RulePlan.Unread).
const (
	// UnreadWorkspace: a dependency's workspace path, for a reason other
	// than the workspace being gone.
	UnreadWorkspace = "workspace"
	// UnreadExport: an APIExport the rule names, or its schemas.
	UnreadExport = "export"
)

func (rp *RulePlan) unread(what, why string) {
	if rp.Unread == nil {
		rp.Unread = map[string]string{}
	}
	rp.Unread[what] = why
}

// Plan is the desired state computed from all rules at once.
type Plan struct {
	// Webhooks maps each protected logical cluster to the resources its
	// webhook configuration must cover.
	Webhooks map[string][]schema.GroupVersionResource
	// Scopes maps each protected logical cluster and resource to the
	// logical clusters of the rules that protect it: the workspaces whose
	// rules the webhook must have read to decide its deletion.
	Scopes map[string]map[schema.GroupVersionResource][]string
	// Indexes maps each logical cluster that holds valid rules, and lets
	// the controller in, to the dependent resources its reference index
	// configuration must cover.
	Indexes map[string][]schema.GroupVersionResource
	Rules   map[string]*RulePlan
	// Held are the protected resources of dependencies whose workspace
	// could not be read and that this process never resolved: what is
	// installed for them is kept (KeepInstalled).
	Held []Held
	// Stamps is the stamp of each protected resource (PlanStamps); Sync
	// fills it in.
	Stamps Stamps
	// Publications are what the configurations are to publish for each
	// resource when objects are settled (publish); Sync fills them in.
	Publications map[schema.GroupResource]settle.Publication
}

// ResolveFunc maps a workspace path to a logical cluster name.
type ResolveFunc func(ctx context.Context, path string) (string, error)

// ComputePlan recomputes the desired webhook configurations from every
// current rule. Nothing is carried over from earlier runs: a dependency
// that was removed or changed simply does not appear. A failure to read
// is never taken for nothing to protect: a dependency whose workspace path
// cannot be read (resolve fails other than with ErrWorkspaceNotFound)
// goes on protecting the cluster the path last resolved to, or, unknown
// that, is Held, and the rule reports that it cannot be checked. Whether the exports
// serve a rule's types (Served, read through exports) decides its
// readiness, never what is installed: a type no export serves gets no
// requests, so its entry costs nothing, the rest of the rule keeps
// protecting, and a failure to read an export can never take protection
// away.
func ComputePlan(ctx context.Context, rules []RuleInput, bindings map[string]Binding, resolve ResolveFunc, exports ExportFunc) *Plan {
	p := &Plan{Webhooks: map[string][]schema.GroupVersionResource{}, Scopes: map[string]map[schema.GroupVersionResource][]string{}, Indexes: map[string][]schema.GroupVersionResource{}, Rules: map[string]*RulePlan{}}
	var edges []v1alpha1.CycleEdge
	for _, r := range rules {
		rp := &RulePlan{Acyclic: Outcome{OK: true, Reason: "NoCycle", Message: "the rule is not part of a dependency cycle"}}
		p.Rules[r.Key] = rp
		if r.Invalid != "" {
			rp.Resolved = Outcome{Reason: "InvalidSpec", Message: r.Invalid}
			rp.Served = Outcome{Reason: "InvalidSpec", Message: r.Invalid}
			rp.Installed = Outcome{Reason: "InvalidSpec", Message: r.Invalid}
			rp.Indexed = Outcome{Reason: "InvalidSpec", Message: r.Invalid}
			continue
		}
		// The index concerns the dependent type alone, so it does not wait
		// for the dependency workspaces to resolve.
		planIndex(p, rp, r, bindings)
		for _, d := range r.Dependencies {
			edges = append(edges, v1alpha1.CycleEdge{Rule: r.Key, From: groupResource(r.Dependent), To: groupResource(d.GVR)})
		}

		var resolveErrs []string
		notFound, unread := false, false
		targets := map[string][]schema.GroupVersionResource{}
		// paths names the dependency paths behind each target, for
		// messages a person can act on.
		paths := map[string][]string{}
		clusters := make([]string, len(r.Dependencies))
		for i, d := range r.Dependencies {
			cluster, err := resolve(ctx, d.ExportPath)
			if err != nil {
				resolveErrs = append(resolveErrs, err.Error())
				// Only a read that found the workspace gone says there is
				// nothing to protect there. Any other failure says nothing
				// about it: the dependency keeps the cluster its path last
				// resolved to, or, when this process never resolved it, the
				// entries installed for it (KeepInstalled).
				var u *UnreadError
				switch {
				case errors.Is(err, ErrWorkspaceNotFound):
					notFound = true
					continue
				case errors.As(err, &u) && u.LastKnown != "":
					unread = true
					cluster = u.LastKnown.String()
				default:
					unread = true
					p.Held = append(p.Held, Held{Rule: r.Key, GVR: d.GVR})
					continue
				}
			}
			clusters[i] = cluster
			targets[cluster] = append(targets[cluster], d.GVR)
			if !slices.Contains(paths[cluster], d.ExportPath) {
				paths[cluster] = append(paths[cluster], d.ExportPath)
			}
		}
		exportUnread := false
		rp.Served = planServed(ctx, r, clusters, bindings, func(ctx context.Context, cluster, name string) (*v1alpha1.ExportTypes, error) {
			t, err := exports(ctx, cluster, name)
			exportUnread = exportUnread || (err != nil && !errors.Is(err, process.ErrExportNotFound))
			return t, err
		})
		if exportUnread {
			rp.unread(UnreadExport, rp.Served.Message)
		}
		if len(resolveErrs) > 0 {
			reason := "ResolveFailed"
			if notFound {
				reason = "WorkspaceNotFound"
			}
			rp.Resolved = Outcome{Reason: reason, Message: strings.Join(resolveErrs, "; ")}
			if !unread {
				rp.Installed = Outcome{Reason: "WorkspacesNotResolved", Message: "waiting until every dependency workspace resolves"}
				continue
			}
			rp.unread(UnreadWorkspace, rp.Resolved.Message)
			// Whether the exports serve the types cannot be told where
			// the workspace cannot be read: a verdict reached stands.
			if rp.Served.Unknown {
				rp.Served.Keep = true
			}
		} else {
			rp.Resolved = Outcome{OK: true, Reason: "Resolved", Message: fmt.Sprintf("all %d dependency workspaces resolved", len(r.Dependencies))}
		}

		var problems []string
		reason := ""
		for _, cluster := range sortedKeys(targets) {
			paths := strings.Join(paths[cluster], ", ")
			b, bound := bindings[cluster]
			switch {
			case !bound:
				reason = "ExportNotBound"
				problems = append(problems, fmt.Sprintf("workspace %s has not bound the dep-ctrl APIExport: create an APIBinding to it there", paths))
			case !b.ClaimAccepted:
				if reason == "" {
					reason = "ClaimNotAccepted"
				}
				problems = append(problems, fmt.Sprintf("workspace %s bound the dep-ctrl APIExport but did not accept its permission claim on validatingwebhookconfigurations", paths))
			default:
				p.Webhooks[cluster] = append(p.Webhooks[cluster], targets[cluster]...)
				if p.Scopes[cluster] == nil {
					p.Scopes[cluster] = map[schema.GroupVersionResource][]string{}
				}
				for _, gvr := range targets[cluster] {
					p.Scopes[cluster][gvr] = append(p.Scopes[cluster][gvr], ruleCluster(r.Key))
				}
				rp.Targets = append(rp.Targets, cluster)
			}
		}
		switch {
		case len(problems) > 0:
			rp.Installed = Outcome{Reason: reason, Message: strings.Join(problems, "; ")}
		case unread:
			rp.Installed = keptOutcome
		default:
			rp.Installed = Outcome{OK: true, Reason: "Installed", Message: fmt.Sprintf("webhook configuration installed in %d workspace(s)", len(rp.Targets))}
		}
	}
	for key, cycle := range v1alpha1.FindCycles(edges) {
		p.Rules[key].Acyclic = Outcome{Reason: "CycleDetected", Message: fmt.Sprintf(
			"the rule is part of a dependency cycle (%s): objects on it protect each other and can only be deleted after setting the skip-protection annotation on one of them; remove or change one rule to break the cycle", cycle)}
	}
	for cluster, gvrs := range p.Webhooks {
		p.Webhooks[cluster] = dedupGVRs(gvrs)
	}
	for _, byGVR := range p.Scopes {
		for gvr, rules := range byGVR {
			sort.Strings(rules)
			byGVR[gvr] = slices.Compact(rules)
		}
	}
	for cluster, gvrs := range p.Indexes {
		p.Indexes[cluster] = dedupGVRs(gvrs)
	}
	return p
}

// PlanStamps computes the stamp of every resource valid rules protect,
// given the UID of the intact reference index configuration in each
// workspace (liveEpochs). The webhook computes the same from its registry,
// which holds every valid rule whether or not its workspaces resolve: the
// two must agree before any object is settled, so both count the same
// rules, and both compute the stamp with settle.StampFor. A resource protected by a rule whose reference index is not in
// place as its status.indexEpoch says gets no stamp, so that every deletion
// of it goes to the webhook: writes may have skipped the index, recording
// no intent and leaving settled objects they reference settled. Nor does a
// resource that a rule references at a path whose writes no index webhook
// may see (settle.WrittenUnseen, as the webhook's registry holds it).
func PlanStamps(rules []RuleInput, liveEpochs map[string]string) Stamps {
	stamps, _ := planStamps(rules, liveEpochs)
	return stamps
}

// planStamps is PlanStamps, with the rules over every protected type as a
// stamp counts them, whether or not the type gets one.
func planStamps(rules []RuleInput, liveEpochs map[string]string) (Stamps, map[schema.GroupResource][]settle.Protecting) {
	byType := map[schema.GroupResource][]settle.Protecting{}
	for _, r := range rules {
		if r.Invalid != "" {
			continue
		}
		live := r.IndexEpoch != "" && liveEpochs[ruleCluster(r.Key)] == r.IndexEpoch
		for _, d := range r.Dependencies {
			gr := d.GVR.GroupResource()
			p, err := fieldpath.Parse(d.FieldPath)
			byType[gr] = append(byType[gr], settle.Protecting{
				Rule:   settle.RuleRef{Key: r.Key, UID: r.UID, Generation: r.Generation, IndexEpoch: r.IndexEpoch},
				Live:   live,
				Unseen: err != nil || settle.WrittenUnseen(p),
			})
		}
	}
	out := Stamps{}
	for gr, ps := range byType {
		if stamp, ok := settle.StampFor(ps); ok {
			out[gr] = stamp
		}
	}
	return out, byType
}

// planIndex decides whether rule r's dependent type gets the reference
// index. The dependent type is exported from the rule's own workspace
// (spec.dependent.apiExportName names an export there), and kcp takes the
// mutating webhooks for a bound resource from its export's workspace: so
// the configuration goes next to the rule. Without it deletes are still
// decided, only by reading every dependent, so the outcome never blocks
// readiness.
func planIndex(p *Plan, rp *RulePlan, r RuleInput, bindings map[string]Binding) {
	cluster := ruleCluster(r.Key)
	b, bound := bindings[cluster]
	slow := fmt.Sprintf("deletes are still checked, but by reading every %s in the consumer workspace", groupResource(r.Dependent))
	switch {
	case !bound:
		rp.Indexed = Outcome{Reason: "ExportNotBound", Message: "this workspace has not bound the dep-ctrl APIExport, so the reference index webhook cannot be installed here: " +
			slow + "; bind the export here (depctrl_provider_binding)"}
	case !b.IndexClaimAccepted:
		rp.Indexed = Outcome{Reason: "ClaimNotAccepted", Message: "the binding of the dep-ctrl APIExport in this workspace did not accept its permission claim on mutatingwebhookconfigurations, so the reference index webhook is not installed: " +
			slow + "; accept the claim (depctrl_provider_binding does) to index them"}
	default:
		p.Indexes[cluster] = append(p.Indexes[cluster], r.Dependent)
		rp.IndexTarget = cluster
		rp.Indexed = Outcome{OK: true, Reason: "Indexed", Message: fmt.Sprintf(
			"the reference index webhook configuration in this workspace covers writes of %s", groupResource(r.Dependent))}
	}
}

// Protected is what the configuration in cluster must cover: each resource
// with the scope of the rules that protect it.
func (p *Plan) Protected(cluster string) Protected {
	out := Protected{}
	for _, gvr := range p.Webhooks[cluster] {
		out[gvr] = admission.Of(p.Scopes[cluster][gvr]...)
	}
	return out
}

// ruleCluster is the logical cluster of a rule key "<cluster>/<name>".
func ruleCluster(key string) string {
	cluster, _, _ := strings.Cut(key, "/")
	return cluster
}

func groupResource(gvr schema.GroupVersionResource) string {
	return gvr.GroupResource().String()
}

func dedupGVRs(in []schema.GroupVersionResource) []schema.GroupVersionResource {
	sort.Slice(in, func(i, j int) bool { return gvrString(in[i]) < gvrString(in[j]) })
	out := in[:0]
	for i, g := range in {
		if i == 0 || in[i-1] != g {
			out = append(out, g)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
