package controller

import (
	"net/url"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// Held is one protected resource of a rule whose dependency workspace could
// not be read, and that this process never resolved: it started while the
// read failed (a restart while a grant is missing, say). The plan cannot
// tell which workspace protects it, so whatever is installed that may be
// the rule's stays.
type Held struct {
	// Rule is the rule's key, "<cluster>/<name>".
	Rule string
	GVR  schema.GroupVersionResource
}

// keptOutcome is WebhookInstalled of a rule some of whose dependency
// workspaces cannot be read. It is Unknown, not True: what is installed
// may not be what the rule names now (a workspace recreated meanwhile).
// The message does not vary from run to run, so that an outage writes the
// status once.
var keptOutcome = Outcome{Unknown: true, Reason: "WorkspacesUnreadable", Message: "some dependency workspaces cannot be read (WorkspacesResolved says why), " +
	"so whether the webhook configurations cover what the rule names cannot be checked; what is installed for the rule is kept as it is " +
	"and still enforced, and is checked again as soon as the workspaces can be read"}

// KeepInstalled keeps in the plan every installed deletion entry that may
// be a held resource's: one for its resource whose scope names the held
// rule's workspace, or names none. installed is what each workspace's
// configuration covers now (installedProtection). Keeping more than the
// rule had costs requests to the webhook; keeping less would let a
// referenced object be deleted.
func (p *Plan) KeepInstalled(installed map[string]Protected, bindings map[string]Binding) {
	for _, h := range p.Held {
		ruleWS := ruleCluster(h.Rule)
		rp := p.Rules[h.Rule]
		for _, cluster := range sortedKeys(installed) {
			sc, ok := installed[cluster][h.GVR]
			if !ok || (sc.Named && !slices.Contains(sc.Clusters, ruleWS)) || !bindings[cluster].ClaimAccepted {
				continue
			}
			if !slices.Contains(p.Webhooks[cluster], h.GVR) {
				p.Webhooks[cluster] = dedupGVRs(append(p.Webhooks[cluster], h.GVR))
			}
			if p.Scopes[cluster] == nil {
				p.Scopes[cluster] = map[schema.GroupVersionResource][]string{}
			}
			if rules := p.Scopes[cluster][h.GVR]; !slices.Contains(rules, ruleWS) {
				rules = append(rules, ruleWS)
				slices.Sort(rules)
				p.Scopes[cluster][h.GVR] = rules
			}
			if rp != nil && !slices.Contains(rp.Targets, cluster) {
				rp.Targets = append(rp.Targets, cluster)
			}
		}
	}
}

// installedProtection reads, from the configurations called name among
// objs, what each workspace's deletion webhooks cover: each resource with
// the scope its URL names (Unnamed when it names none or cannot be read).
// A configuration that cannot be decoded covers nothing here.
func installedProtection(objs []process.ShardObject, name string) map[string]Protected {
	out := map[string]Protected{}
	for cluster, u := range byCluster(objs, name) {
		var c admissionregistrationv1.ValidatingWebhookConfiguration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
			continue
		}
		covered := Protected{}
		for _, h := range c.Webhooks {
			sc := urlScope(h.ClientConfig.URL)
			for _, gvr := range deletedResources(h) {
				covered[gvr] = mergeScopes(covered, gvr, sc)
			}
		}
		out[cluster] = covered
	}
	return out
}

// mergeScopes is sc together with the scope already covered for gvr, if
// any: entries written by hand may cover a resource twice.
func mergeScopes(covered Protected, gvr schema.GroupVersionResource, sc admission.Scope) admission.Scope {
	prev, ok := covered[gvr]
	switch {
	case !ok:
		return sc
	case !prev.Named || !sc.Named:
		return admission.Unnamed
	}
	return admission.Of(append(slices.Clone(prev.Clusters), sc.Clusters...)...)
}

// urlScope is the scope a webhook URL names; Unnamed for none, or for one
// that cannot be parsed: any rule may then be behind the entry.
func urlScope(u *string) admission.Scope {
	if u == nil {
		return admission.Unnamed
	}
	parsed, err := url.Parse(*u)
	if err != nil {
		return admission.Unnamed
	}
	sc, err := admission.Parse(parsed.Path)
	if err != nil {
		return admission.Unnamed
	}
	return sc
}
