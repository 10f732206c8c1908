package provider

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// Resource defaults of both components.
const (
	defaultCPURequest    = "50m"
	defaultMemoryRequest = "64Mi"
	defaultMemoryLimit   = "256Mi"
)

// Descriptions shared by depctrl_runtime and depctrl_runtime_manifests.
var runtimeDocs = map[string]string{
	"namespace":         "The namespace the runtime runs in. Default `" + deploy.DefaultNamespace + "`. Changing it replaces the deployment.",
	"create_namespace":  "Whether this resource creates (and on destroy deletes) the namespace. Default `true`; set `false` to deploy into a namespace managed elsewhere. Changing it replaces the deployment.",
	"name":              "Prefix of every object: `<name>-controller`, `<name>-webhook`, `<name>-webhook-tls`, ... Default `" + deploy.DefaultName + "`. Change it only to run two installations in one namespace; changing it replaces the deployment.",
	"image":             "The runtime image repository, without tag; the image holds both binaries (`make image` builds it). Default `" + deploy.DefaultImage + "`. Updates in place (the pods roll).",
	"image_tag":         "The image tag. Defaults to the version of this provider, so that provider and runtime always match. A provider built from source is versioned `dev` (`go build`, `go install`) or, by `make build` and `make install`, with `git describe --tags --always --dirty` of its checkout (such as `v0.4.0-3-g7fab0fb-dirty`), and `make image` tags the runtime image it builds with that same version. No registry holds such an image: push the one you built and set `image` to its repository, and `image_tag` only when you pushed it under another tag. Updates in place (the pods roll).",
	"image_pull_policy": "`Always`, `IfNotPresent` (default) or `Never`. Updates in place.",
	"workspace_path": "The dep-ctrl workspace, such as `depctrl_export.this.workspace_path`. When set, the servers of both kubeconfigs are pointed at it " +
		"(`https://<front-proxy>/clusters/<workspace_path>`), so kubeconfigs issued for the front-proxy in general (by the kcp-operator, for example) work as they are, " +
		"and referencing the export orders the runtime after it. Unset (default): the kubeconfigs' servers must already name the workspace. Updates in place.",
	"api_export_name": "The name of the dep-ctrl APIExport (and of its APIExportEndpointSlice) in the dep-ctrl workspace, passed to both binaries as `--apiexport-name`; `depctrl_export`'s `name`. Not the `api_export_name` of a rule's `dependent`, which names the export of the dependent type. Default `" + v1alpha1.DefaultAPIExportName + "`. Updates in place.",
	"kubeconfig_path": "Path to a kubeconfig for this component's kcp identity, whose server is the dep-ctrl workspace through the front-proxy (`https://<front-proxy>/clusters/<path>`). " +
		"Files it references are embedded, and only its current context (or `context`) is kept, so the Secret works in the pod. Only the path is stored in state; a change of the file's content shows as an update. Exactly one of `kubeconfig_path`, `kubeconfig_wo` and `kubeconfig` is required.",
	"kubeconfig": "The kubeconfig content instead of `kubeconfig_path`. Sensitive, but stored in state: prefer `kubeconfig_wo` (Terraform 1.11 and later) " +
		"or `kubeconfig_path`.",
	"kubeconfig_wo": "The kubeconfig content, write-only (Terraform 1.11 and later): Terraform never stores it, in state or plan, so it may come from an " +
		"ephemeral resource (a secrets manager) or a variable without ending up in the state file. It is read at every plan and apply, so a changed " +
		"content shows as an update; set `kubeconfig_wo_version` as well and change it to roll out a new kubeconfig explicitly.",
	"kubeconfig_wo_version": "Any number, stored in state: a change applies `kubeconfig_wo` again (the kubeconfig Secret is rewritten and the pods roll). " +
		"Only meaningful with `kubeconfig_wo`.",
	"context":        "The kubeconfig context to use; default its current context.",
	"replicas":       "Number of pods. Default `2`. The controller elects a leader, so only one writes at a time; webhook replicas share the load. Updates in place.",
	"extra_args":     "Arguments appended to the binary's command line, such as `[\"--zap-log-level=debug\"]`. Updates in place (the pods roll).",
	"cpu_request":    "CPU request, a Kubernetes quantity. Default `50m`. Updates in place.",
	"memory_request": "Memory request. Default `64Mi`. Updates in place.",
	"cpu_limit":      "CPU limit. Default: none. Updates in place.",
	"memory_limit":   "Memory limit. Default `256Mi`. Updates in place.",
	"port":           fmt.Sprintf("The container port the webhook serves HTTPS on; the Service maps port 443 to it. Any port but the webhook's metrics (`%d`) and probes (`%d`). Default `%d`. Updates in place.", deploy.WebhookMetricsPort, deploy.WebhookProbePort, deploy.DefaultWebhookPort),
	"url": "The URL kcp calls the webhook at, when kcp does not run in this cluster (an ingress or load balancer in front of the Service). " +
		"Default: the Service's cluster DNS name, `https://<name>-webhook.<namespace>.svc:443/validate`. kcp calls the reference index at `/mutate` on the same host, so a proxy in front must pass both paths. Its host is added to the generated certificate. Updates in place.",
	"extra_sans": "Further DNS names or IP addresses for the generated serving certificate. Changing them issues a new certificate in place.",
	"tls_secret_name": "An existing `kubernetes.io/tls` Secret in the namespace to serve with instead of a generated certificate (for cert-manager and the like). " +
		"It must also hold `ca.crt`, which the controller hands to kcp. Unset (default): the provider generates a CA and a serving certificate. Updates in place.",
	"settle_objects": "Whether protected objects the webhook finds unreferenced are settled (`--settle-objects` on both binaries): their deletions then skip the webhook " +
		"and cost what an unprotected deletion does. Default `true`. It relies on the reference index configurations in the dependent types' " +
		"export workspaces staying as the controller wrote them, which whoever may write there could undo as well as delete the rules " +
		"(see the architecture guide, \"Settled objects\"); `false` sends every deletion of a protected object to the webhook. Updates in place: the webhook rolls out first, then the controller.",
	"skip_protection_groups": "Groups whose members may delete a protected object with the `dependencies.opendefense.cloud/skip-protection: \"true\"` annotation. " +
		"For anyone else the annotation is ignored, and the denial says so. Unset (default): anyone who may annotate the object may use it.",
	"deferred_deletion": "Whether the webhook defers the deletions it refuses (`--deferred-deletion`): a deletion refused because dependents still reference the object, " +
		"of an object that opts in (the annotation `" + v1alpha1.DeferDeletionAnnotation + ": \"true\"` on it or on its namespace, or `defer_deletion` " +
		"on a `depctrl_dependency_rule` that protects it; the object's annotation decides first, then its namespace's, then the rules, so `\"false\"` " +
		"on the object opts it out whatever its namespace or the rules say), is recorded on the object, and once nothing references it the webhook deletes it itself, " +
		"with the options of the refused request and after checking with a SubjectAccessReview that the user who asked may still delete it. " +
		"The webhook's identity then needs `deferred_deletion = true` on every `depctrl_shard`: `delete` on its `protected_resources` alone, `create` on SubjectAccessReviews " +
		"and `get` on Namespaces; without that grant carrying out a deferred deletion fails with a permission error and the object stays. " +
		"Default `false`: a refused deletion is only refused, and the argument is not rendered at all. See the deferred deletion guide. Updates in place (the webhook pods roll).",
	"certificate_validity": "How long a generated serving certificate is valid, as a Go duration. Default `" + defaultCertificateValidity + "` (a year). " +
		"The CA is valid ten times as long, so renewing the serving certificate never changes what kcp trusts.",
	"certificate_renew_before": "A plan within this duration of the serving certificate's expiry issues a new one (in place, the webhook pods roll). Default `" + defaultCertificateRenewal + "` (30 days).",
}

func runtimeComponentAttributes(component string, sensitive map[string]bool) map[string]schema.Attribute {
	opt := func(name string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Sensitive: sensitive[name], MarkdownDescription: runtimeDocs[name]}
	}
	quantity := func(name, def string) schema.StringAttribute {
		a := schema.StringAttribute{
			Optional: true, Computed: def != "", MarkdownDescription: runtimeDocs[name],
			Validators: []validator.String{quantityValidator()},
		}
		if def != "" {
			a.Default = stringdefault.StaticString(def)
		}
		return a
	}
	return map[string]schema.Attribute{
		"kubeconfig_path": schema.StringAttribute{
			Optional: true, MarkdownDescription: runtimeDocs["kubeconfig_path"],
			Validators: []validator.String{
				stringvalidator.LengthAtLeast(1),
				stringvalidator.ExactlyOneOf(path.MatchRoot(component).AtName("kubeconfig_path"), path.MatchRoot(component).AtName("kubeconfig"),
					path.MatchRoot(component).AtName("kubeconfig_wo")),
			},
		},
		"kubeconfig": opt("kubeconfig"),
		"kubeconfig_wo": schema.StringAttribute{
			Optional: true, Sensitive: true, WriteOnly: true, MarkdownDescription: runtimeDocs["kubeconfig_wo"],
			Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
		},
		"kubeconfig_wo_version": schema.Int64Attribute{
			Optional: true, MarkdownDescription: runtimeDocs["kubeconfig_wo_version"],
			Validators: []validator.Int64{int64validator.AlsoRequires(path.MatchRoot(component).AtName("kubeconfig_wo"))},
		},
		"context": opt("context"),
		"replicas": schema.Int64Attribute{
			Optional: true, Computed: true, Default: int64default.StaticInt64(deploy.DefaultReplicas),
			MarkdownDescription: runtimeDocs["replicas"],
			Validators:          []validator.Int64{int64validator.Between(0, 10)},
		},
		"extra_args": schema.ListAttribute{
			Optional: true, Computed: true, ElementType: types.StringType,
			Default:             listdefault.StaticValue(types.ListValueMust(types.StringType, nil)),
			MarkdownDescription: runtimeDocs["extra_args"],
			Validators:          []validator.List{listvalidator.ValueStringsAre(stringvalidator.RegexMatches(flagRE, "must be a flag such as --zap-log-level=debug"))},
		},
		"cpu_request":    quantity("cpu_request", defaultCPURequest),
		"memory_request": quantity("memory_request", defaultMemoryRequest),
		"cpu_limit":      quantity("cpu_limit", ""),
		"memory_limit":   quantity("memory_limit", defaultMemoryLimit),
	}
}

func runtimeSchemaAttributes() map[string]schema.Attribute {
	controller := runtimeComponentAttributes("controller", map[string]bool{"kubeconfig": true})
	webhook := runtimeComponentAttributes("webhook", map[string]bool{"kubeconfig": true})
	webhook["port"] = schema.Int64Attribute{
		Optional: true, Computed: true, Default: int64default.StaticInt64(deploy.DefaultWebhookPort),
		MarkdownDescription: runtimeDocs["port"],
		Validators:          []validator.Int64{int64validator.Between(1, 65535), int64validator.NoneOf(deploy.WebhookMetricsPort, deploy.WebhookProbePort)},
	}
	webhook["url"] = schema.StringAttribute{
		Optional: true, MarkdownDescription: runtimeDocs["url"],
		Validators: []validator.String{httpsURLValidator("https://depctrl-webhook.example.com/validate")},
	}
	webhook["extra_sans"] = schema.ListAttribute{
		Optional: true, Computed: true, ElementType: types.StringType,
		Default:             listdefault.StaticValue(types.ListValueMust(types.StringType, nil)),
		MarkdownDescription: runtimeDocs["extra_sans"],
		Validators:          []validator.List{listvalidator.ValueStringsAre(stringvalidator.RegexMatches(sanRE, "must be a DNS name or an IP address"))},
	}
	webhook["tls_secret_name"] = schema.StringAttribute{
		Optional: true, MarkdownDescription: runtimeDocs["tls_secret_name"],
		Validators: []validator.String{objectNameValidator("must be a Secret name")},
	}
	webhook["skip_protection_groups"] = schema.ListAttribute{
		Optional: true, ElementType: types.StringType,
		MarkdownDescription: runtimeDocs["skip_protection_groups"],
		Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.ValueStringsAre(
			stringvalidator.RegexMatches(regexp.MustCompile(`^[^,\s]+$`), "must be a group name without commas or spaces"))},
	}
	webhook["deferred_deletion"] = schema.BoolAttribute{
		Optional: true, Computed: true, Default: booldefault.StaticBool(false),
		MarkdownDescription: runtimeDocs["deferred_deletion"],
	}
	webhook["certificate_validity"] = schema.StringAttribute{
		Optional: true, Computed: true, Default: stringdefault.StaticString(defaultCertificateValidity),
		MarkdownDescription: runtimeDocs["certificate_validity"],
		Validators:          []validator.String{durationValidator(time.Hour)},
	}
	webhook["certificate_renew_before"] = schema.StringAttribute{
		Optional: true, Computed: true, Default: stringdefault.StaticString(defaultCertificateRenewal),
		MarkdownDescription: runtimeDocs["certificate_renew_before"],
		Validators:          []validator.String{durationValidator(0)},
	}
	name := func(attr, def string) schema.StringAttribute {
		return nameAttribute(def, runtimeDocs[attr], dnsLabelValidator("must be a DNS label: lower case letters, digits and '-'"))
	}
	return map[string]schema.Attribute{
		"namespace": name("namespace", deploy.DefaultNamespace),
		"name":      name("name", deploy.DefaultName),
		"create_namespace": schema.BoolAttribute{
			Optional: true, Computed: true, Default: booldefault.StaticBool(true),
			MarkdownDescription: runtimeDocs["create_namespace"],
			PlanModifiers:       []planmodifier.Bool{boolRequiresReplace()},
		},
		"image": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(deploy.DefaultImage),
			MarkdownDescription: runtimeDocs["image"],
			Validators:          []validator.String{stringvalidator.RegexMatches(imageRE, "must be an image repository without tag or digest, such as registry.example.com/depctrl/runtime")},
		},
		"image_tag": schema.StringAttribute{
			Optional: true, Computed: true, MarkdownDescription: runtimeDocs["image_tag"],
			Validators: []validator.String{stringvalidator.RegexMatches(imageTagRE, "must be an image tag such as v1.2.3")},
		},
		"image_pull_policy": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(deploy.DefaultPullPolicy),
			MarkdownDescription: runtimeDocs["image_pull_policy"],
			Validators:          []validator.String{stringvalidator.OneOf("Always", "IfNotPresent", "Never")},
		},
		"workspace_path": schema.StringAttribute{
			Optional: true, MarkdownDescription: runtimeDocs["workspace_path"],
			Validators: []validator.String{workspacePathValidator()},
		},
		"api_export_name": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(v1alpha1.DefaultAPIExportName),
			MarkdownDescription: runtimeDocs["api_export_name"],
			Validators:          []validator.String{objectNameValidator("must be an APIExport name")},
		},
		"settle_objects": schema.BoolAttribute{
			Optional: true, Computed: true, Default: booldefault.StaticBool(true),
			MarkdownDescription: runtimeDocs["settle_objects"],
		},
		"network_policy": networkPolicySchema(),
		"controller": schema.SingleNestedAttribute{
			Required:            true,
			MarkdownDescription: "The controller: it watches DependencyRules and installs the webhook configuration in protected workspaces.",
			Attributes:          controller,
		},
		"webhook": schema.SingleNestedAttribute{
			Required:            true,
			MarkdownDescription: "The admission webhook: it decides DELETEs of protected objects.",
			Attributes:          webhook,
		},
	}
}

func (r *runtimeResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := runtimeSchemaAttributes()
	attrs["id"] = schema.StringAttribute{
		Computed: true, MarkdownDescription: "`<namespace>/<name>`, the import ID. An import ID may add what the cluster does not record, as " +
			"`,<attribute>=<value>` for `workspace_path`, `controller.kubeconfig_path`, `controller.context`, `webhook.kubeconfig_path`, " +
			"`webhook.context`, `webhook.certificate_validity` and `webhook.certificate_renew_before`: given as the configuration sets them, the plan after import is empty.",
		PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
	}
	attrs["wait_for_rollout"] = schema.BoolAttribute{
		Optional: true, Computed: true, Default: booldefault.StaticBool(true),
		MarkdownDescription: "Wait until both Deployments have rolled out and all their pods are available, within the create or update timeout. Default `true`.",
	}
	attrs["webhook_url"] = schema.StringAttribute{
		Computed:            true,
		MarkdownDescription: "The URL the controller writes into the webhook configurations, which kcp calls: `webhook.url` or the Service URL.",
	}
	attrs["ca_bundle"] = schema.StringAttribute{
		Computed: true,
		MarkdownDescription: "The PEM CA bundle kcp verifies the webhook with; the controller already gets it from a ConfigMap. " +
			"During a CA rotation it holds the new and the previous CA.",
	}
	attrs["certificate_not_after"] = schema.StringAttribute{
		Computed:            true,
		MarkdownDescription: "When the webhook's serving certificate expires (RFC 3339).",
	}
	attrs["objects"] = schema.MapAttribute{
		Computed: true, ElementType: types.StringType,
		MarkdownDescription: "Every Kubernetes object of the deployment (`Kind/name`) with a fingerprint of what was applied. " +
			"A refresh replaces the fingerprint with `" + objectMissing + "` or `" + objectChanged + "` when someone deleted or edited the object, so the next plan repairs it.",
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Deploys the depctrl runtime (controller and webhook) into the Kubernetes cluster of the provider's `kubernetes` block: " +
			"the namespace, ServiceAccounts, Secrets with each component's kcp kubeconfig, the webhook's TLS certificate (generated, or an existing Secret), " +
			"the two Deployments, the webhook Service, a PodDisruptionBudget per component with two or more replicas and a NetworkPolicy per component (`network_policy`). Every object is applied with server-side apply, so a plan shows and an apply repairs " +
			"what was changed by hand.\n\n" +
			"The image tag defaults to this provider's version: upgrading the provider rolls the runtime to the matching version. " +
			"The generated CA and keys never enter plans, outputs or state: they live in the cluster (the `<name>-webhook-tls` Secret, and the CA key in `<name>-webhook-issuer`, which no pod mounts), and the provider reads them back to renew; the resource's private state keeps only digests of the Secrets it applied. " +
			"The data source `depctrl_runtime_manifests` renders the same objects as YAML for GitOps.",
		Attributes: attrs,
		Blocks:     timeoutsOnly(ctx, "the {op} of the runtime", sameTimeouts(defaultRuntimeTimeout)),
	}
	documentSchema(ctx, &resp.Schema)
}

// ValidateConfig rejects a renewal window as long as the certificate's
// validity: every plan would issue a new certificate.
func (r *runtimeResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	m, ok := getModel[runtimeModel](ctx, req.Config, &resp.Diagnostics)
	if !ok || m.Webhook == nil {
		return
	}
	resp.Diagnostics.Append(validateRenewal(m.Webhook)...)
}

func validateRenewal(w *webhookModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if w.CertificateValidity.IsUnknown() || w.CertificateRenewBefore.IsUnknown() {
		return diags
	}
	validity, renew := defaultCertificateValidity, defaultCertificateRenewal
	if !w.CertificateValidity.IsNull() {
		validity = w.CertificateValidity.ValueString()
	}
	if !w.CertificateRenewBefore.IsNull() {
		renew = w.CertificateRenewBefore.ValueString()
	}
	v, err1 := time.ParseDuration(validity)
	r, err2 := time.ParseDuration(renew)
	if err1 == nil && err2 == nil && r >= v {
		diags.AddAttributeError(path.Root("webhook").AtName("certificate_renew_before"), "Invalid renewal window",
			fmt.Sprintf("webhook.certificate_renew_before (%s) must be shorter than webhook.certificate_validity (%s), or every plan would issue a new certificate", renew, validity))
	}
	return diags
}
