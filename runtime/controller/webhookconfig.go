package controller

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// WebhookSettings are what every installed webhook configuration points at.
type WebhookSettings struct {
	// Name of the ValidatingWebhookConfiguration in each protected
	// workspace, and of the MutatingWebhookConfiguration in each workspace
	// that holds rules.
	ConfigurationName string
	// URL of the webhook's validation endpoint.
	URL string
	// MutateURL is the webhook's reference index endpoint.
	MutateURL string
	// CABundle verifies the webhook's serving certificate.
	CABundle []byte
	// TimeoutSeconds bounds each admission call; the webhook answers within
	// a shorter deadline of its own.
	TimeoutSeconds int32
	// Settle adds what settling needs to each protected workspace's
	// configuration: the entry that hears of new objects, and the stamps
	// in the deletion webhooks' selectors. The guard of the settled label
	// is there either way (DesiredScopedWebhookConfiguration says why).
	Settle bool
}

// Scoped returns the settings with the reference index's URL naming sc:
// the webhook then decides the writes sent there once it has read the
// rules of those workspaces, even while other shards cannot be read
// (admission.Scope).
func (s WebhookSettings) Scoped(sc admission.Scope) WebhookSettings {
	s.MutateURL = sc.URL(s.MutateURL)
	return s
}

// webhookName is the name of the single webhook inside each configuration;
// kcp reports it in denials ("admission webhook ... denied the request").
const webhookName = "deletion-protection.dependencies.opendefense.cloud"

const managedByLabel = v1alpha1.ManagedByLabel

// DesiredWebhookConfiguration renders the configuration for one protected
// workspace with URLs that name no scope: the webhook decides its requests
// only once it has read every shard's rules.
func DesiredWebhookConfiguration(s WebhookSettings, gvrs []schema.GroupVersionResource) *admissionregistrationv1.ValidatingWebhookConfiguration {
	protected := Protected{}
	for _, gvr := range gvrs {
		protected[gvr] = admission.Unnamed
	}
	return DesiredScopedWebhookConfiguration(s, protected, nil)
}

// Protected maps each resource a workspace's configuration protects to the
// scope of the rules that protect it.
type Protected map[schema.GroupVersionResource]admission.Scope

// Stamps maps each protected resource to the stamp of the rules that
// protect it (package settle): its deletion webhook leaves out the objects
// settled under that stamp. A resource without one sends every deletion.
type Stamps map[schema.GroupResource]string

// DesiredScopedWebhookConfiguration renders the configuration for one
// protected workspace: one deletion webhook for each scope, covering the
// resources protected by the rules of that scope, so that a shard that
// cannot be read holds up the deletions of only the types its rules
// protect; and one webhook that keeps intents, for every protected
// resource. Entries and their rules are sorted, so the same rules always
// give the same object and nothing is rewritten needlessly. Resources of one
// scope are split further by their stamp, since a webhook has one object
// selector; and a guard entry sends every write that would settle an object
// to the webhook, which refuses it unless it is its own.
func DesiredScopedWebhookConfiguration(s WebhookSettings, protected Protected, pubs map[schema.GroupResource]settle.Publication) *admissionregistrationv1.ValidatingWebhookConfiguration {
	byScope := map[string][]schema.GroupVersionResource{}
	scopes := map[string]admission.Scope{}
	stampsOf := map[string][]string{}
	all := make([]schema.GroupVersionResource, 0, len(protected))
	if !s.Settle {
		pubs = nil
	}
	recorded := map[string]settle.Publication{}
	for gvr, sc := range protected {
		pub := pubs[gvr.GroupResource()]
		stamps := pub.Stamps()
		key := sc.URL("") + " " + strings.Join(stamps, ",")
		byScope[key] = append(byScope[key], gvr)
		scopes[key], stampsOf[key] = sc, stamps
		all = append(all, gvr)
		if len(stamps) > 0 {
			recorded[gvr.GroupResource().String()] = pub
		}
	}
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   s.ConfigurationName,
			Labels: map[string]string{managedByLabel: v1alpha1.WebhookConfigurationManager},
		},
	}
	for i, key := range sortedKeys(byScope) {
		deletion := webhookEntry(s, deletionWebhookName(i), scopes[key].URL(s.URL), resourceRules(byScope[key], admissionregistrationv1.Delete))
		deletion.ObjectSelector = settle.Selector(stampsOf[key]...)
		c.Webhooks = append(c.Webhooks, deletion)
	}
	// The rules of each stamp, for the webhook to check one kept from
	// older rules (settle.Publication.Justified).
	if record := settle.StampsRecord(recorded); record != "" {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, settle.StampsAnnotation, record)
	}
	// Keeping intents needs no rules (it refuses to drop what a write
	// recorded), so its URL names no scope.
	keep := webhookEntry(s, keepIntentsWebhookName, s.URL, resourceRules(all, admissionregistrationv1.Update))
	// Only updates that drop or change an intent: everything else, the
	// webhook's own intent patches that add one included, is updated
	// without calling the webhook, which would allow it.
	keep.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "drops-intents", Expression: keepIntentsCondition}}
	c.Webhooks = append(c.Webhooks, keep)
	// Settling needs no rules either: only the webhook may do it. The
	// guard stays while settling is off, so that no label set meanwhile
	// counts when it is turned on again under the same rules (and so the
	// same stamps). Writes that leave the label alone never reach it.
	guard := webhookEntry(s, settleGuardWebhookName, s.URL, resourceRules(all, admissionregistrationv1.Create, admissionregistrationv1.Update))
	guard.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "settles", Expression: settle.GuardCondition}}
	c.Webhooks = append(c.Webhooks, guard)
	// Only the webhook may record a deferred deletion, whether or not
	// deferral is on, so that no record written meanwhile counts when it
	// is turned on. Writes that leave the record alone never reach it.
	deferGuard := webhookEntry(s, deferGuardWebhookName, s.URL, resourceRules(all, admissionregistrationv1.Create, admissionregistrationv1.Update))
	deferGuard.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "defers", Expression: v1alpha1.DeferGuardCondition}}
	c.Webhooks = append(c.Webhooks, deferGuard)
	if !s.Settle {
		return c
	}
	// New objects are candidates for settling. Missing one only leaves it
	// unsettled, so this entry fails open and never holds up a create.
	candidates := webhookEntry(s, settleCandidatesWebhookName, s.URL, resourceRules(all, admissionregistrationv1.Create))
	candidates.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	c.Webhooks = append(c.Webhooks, candidates)
	return c
}

// failClosed is a validating webhook at url for rules that refuses what it
// cannot decide, has no side effects, and matches every object and
// namespace: protection must not depend on labels the consumer controls.
func webhookEntry(s WebhookSettings, name, url string, rules []admissionregistrationv1.RuleWithOperations) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    name,
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: s.CABundle},
		Rules:                   rules,
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To(s.TimeoutSeconds),
		AdmissionReviewVersions: []string{"v1"},
		NamespaceSelector:       &metav1.LabelSelector{},
		ObjectSelector:          &metav1.LabelSelector{},
	}
}

// deletionWebhookName names the i-th deletion webhook of a configuration:
// the first keeps the name kcp has always reported in denials.
func deletionWebhookName(i int) string {
	if i == 0 {
		return webhookName
	}
	return fmt.Sprintf("%d.%s", i+1, webhookName)
}

// keepIntentsWebhookName is the webhook, in each protected workspace's
// configuration, that refuses an update of a protected object dropping the
// fresh intent of a dependent's write that may not be stored yet.
const keepIntentsWebhookName = "keep-intents." + v1alpha1.Group

// settleGuardWebhookName is the webhook, in each protected workspace's
// configuration, that refuses a create or update setting or changing the
// settled label, unless the webhook itself makes it.
const settleGuardWebhookName = "settle-guard." + v1alpha1.Group

// deferGuardWebhookName is the webhook, in each protected workspace's
// configuration, that refuses a create or update writing a deferred
// deletion, unless the webhook itself makes it.
const deferGuardWebhookName = "defer-guard." + v1alpha1.Group

// settleCandidatesWebhookName is the webhook that hands the webhook each
// new protected object, to be settled once it is old enough.
const settleCandidatesWebhookName = "settle-candidates." + v1alpha1.Group

// keepIntentsCondition selects the updates that drop an intent the object
// carries or change its value: the only ones keepIntents may refuse.
var keepIntentsCondition = "has(oldObject.metadata.annotations) && oldObject.metadata.annotations.exists(k, k.startsWith('" +
	v1alpha1.IntentAnnotationPrefix + "') && (!has(object.metadata.annotations) || !(k in object.metadata.annotations) || " +
	"object.metadata.annotations[k] != oldObject.metadata.annotations[k]))"

// WebhookConfigurationDrifted reports whether existing differs from desired
// in anything this controller owns. Fields the server defaults are filled in
// on desired first, so a freshly written object never counts as drifted.
func WebhookConfigurationDrifted(existing, desired *admissionregistrationv1.ValidatingWebhookConfiguration) bool {
	return managedByDrifted(&existing.ObjectMeta, &desired.ObjectMeta) || !equality.Semantic.DeepEqual(existing.Webhooks, desired.Webhooks) ||
		existing.Annotations[settle.StampsAnnotation] != desired.Annotations[settle.StampsAnnotation]
}

// ApplyOwnedFields copies what this controller owns from desired onto
// existing, keeping server-set metadata such as resourceVersion.
func ApplyOwnedFields(existing, desired *admissionregistrationv1.ValidatingWebhookConfiguration) {
	applyOwnedLabels(&existing.ObjectMeta, &desired.ObjectMeta)
	if record := desired.Annotations[settle.StampsAnnotation]; record != "" {
		metav1.SetMetaDataAnnotation(&existing.ObjectMeta, settle.StampsAnnotation, record)
	} else {
		delete(existing.Annotations, settle.StampsAnnotation)
	}
	existing.Webhooks = desired.Webhooks
}

// managedByDrifted reports whether a configuration lost or changed the label
// that marks it as this controller's; other labels are someone else's.
func managedByDrifted(existing, desired *metav1.ObjectMeta) bool {
	return existing.Labels[managedByLabel] != desired.Labels[managedByLabel]
}

// applyOwnedLabels sets desired's labels on existing and keeps the others.
func applyOwnedLabels(existing, desired *metav1.ObjectMeta) {
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for k, v := range desired.Labels {
		existing.Labels[k] = v
	}
}

// resourceRules is one entry per resource for ops, sorted and without
// duplicates, so the same rules always give the same object.
func resourceRules(gvrs []schema.GroupVersionResource, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	gvrs = append([]schema.GroupVersionResource(nil), gvrs...)
	sort.Slice(gvrs, func(i, j int) bool { return gvrString(gvrs[i]) < gvrString(gvrs[j]) })
	rules := make([]admissionregistrationv1.RuleWithOperations, 0, len(gvrs))
	for i, gvr := range gvrs {
		if i > 0 && gvrs[i-1] == gvr {
			continue
		}
		rules = append(rules, admissionregistrationv1.RuleWithOperations{
			Operations: append([]admissionregistrationv1.OperationType(nil), ops...),
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{gvr.Group},
				APIVersions: []string{gvr.Version},
				Resources:   []string{gvr.Resource},
				Scope:       ptr.To(admissionregistrationv1.AllScopes),
			},
		})
	}
	return rules
}

func gvrString(gvr schema.GroupVersionResource) string {
	return gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}

// coveredResources lists the resources whose DELETEs c sends to the webhook.
func coveredResources(c *admissionregistrationv1.ValidatingWebhookConfiguration) map[schema.GroupVersionResource]bool {
	out := map[schema.GroupVersionResource]bool{}
	for _, w := range c.Webhooks {
		for _, gvr := range deletedResources(w) {
			out[gvr] = true
		}
	}
	return out
}

// deletedResources lists the resources whose DELETEs w sends to the
// webhook.
func deletedResources(w admissionregistrationv1.ValidatingWebhook) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, r := range w.Rules {
		if !slices.Contains(r.Operations, admissionregistrationv1.Delete) {
			continue
		}
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					out = append(out, schema.GroupVersionResource{Group: g, Version: v, Resource: res})
				}
			}
		}
	}
	return out
}

// webhookTargetChanged reports whether the webhook moved (URL or CA): then
// every entry is new as far as propagation goes.
func webhookTargetChanged(existing, desired *admissionregistrationv1.ValidatingWebhookConfiguration) bool {
	e, d := deletionWebhook(existing), deletionWebhook(desired)
	if e == nil || d == nil {
		return true
	}
	// A change of scope alone does not move the webhook: the same
	// endpoint decides the same requests.
	return endpoint(e.ClientConfig.URL) != endpoint(d.ClientConfig.URL) || !equality.Semantic.DeepEqual(e.ClientConfig.CABundle, d.ClientConfig.CABundle)
}

// endpoint is the webhook endpoint u points at, without its scope.
func endpoint(u *string) string {
	if u == nil {
		return ""
	}
	return admission.Endpoint(*u)
}

// deletionWebhook is the webhook in c that decides deletions.
func deletionWebhook(c *admissionregistrationv1.ValidatingWebhookConfiguration) *admissionregistrationv1.ValidatingWebhook {
	for i := range c.Webhooks {
		if c.Webhooks[i].Name == webhookName {
			return &c.Webhooks[i]
		}
	}
	return nil
}
