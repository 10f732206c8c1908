package provider

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

var (
	_ identifiedResource                  = &dependencyRuleResource{}
	_ resource.ResourceWithValidateConfig = &dependencyRuleResource{}
)

const (
	defaultRuleTimeout       = 5 * time.Minute
	defaultRuleDeleteTimeout = 2 * time.Minute
)

// NewDependencyRuleResource returns the depctrl_dependency_rule resource.
func NewDependencyRuleResource() resource.Resource {
	return &dependencyRuleResource{resourceType{name: "dependency_rule"}}
}

type dependencyRuleResource struct{ resourceType }

type ruleModel struct {
	workspaceObjectModel
	Dependent          *ruleDependentModel   `tfsdk:"dependent"`
	Dependencies       []ruleDependencyModel `tfsdk:"dependency"`
	DeferDeletion      types.Bool            `tfsdk:"defer_deletion"`
	WaitForEnforcement types.Bool            `tfsdk:"wait_for_enforcement"`
	Ready              types.Bool            `tfsdk:"ready"`
	Conditions         types.Map             `tfsdk:"conditions"`
	timed
}

type ruleDependentModel struct {
	APIExportName types.String `tfsdk:"api_export_name"`
	Group         types.String `tfsdk:"group"`
	Version       types.String `tfsdk:"version"`
	Kind          types.String `tfsdk:"kind"`
	Resource      types.String `tfsdk:"resource"`
}

type ruleDependencyModel struct {
	APIExportRef *ruleExportRefModel `tfsdk:"api_export_ref"`
	Group        types.String        `tfsdk:"group"`
	Version      types.String        `tfsdk:"version"`
	Resource     types.String        `tfsdk:"resource"`
	FieldRef     *ruleFieldRefModel  `tfsdk:"field_ref"`
}

type ruleExportRefModel struct {
	Path types.String `tfsdk:"path"`
	Name types.String `tfsdk:"name"`
}

type ruleFieldRefModel struct {
	Path types.String `tfsdk:"path"`
}

// deferDeletionDoc describes defer_deletion. The rule only opts in: what
// the object or its namespace says wins (v1alpha1.DefersDeletion), and
// nothing is deferred unless the webhook runs with --deferred-deletion and
// the shards grant it what carrying deletions out takes.
const deferDeletionDoc = "Whether a deletion of an object this rule protects, refused because dependents still reference the object, is deferred " +
	"rather than only refused (`spec.deferDeletion`): the webhook records the deletion on the object and, once nothing references the object, " +
	"deletes it itself, with the options of the refused request and only if the user who asked may still delete it. The refusal is still a " +
	"refusal (403), so a client that deletes in no particular order, such as garbage collection or a GitOps prune, asks once. " +
	"The annotation `" + v1alpha1.DeferDeletionAnnotation + "` on the object, or else on its namespace, overrides the rule: `\"true\"` defers, " +
	"`\"false\"` does not. Where several rules protect a type, one that defers is enough, in the workspaces that bind the export of its dependent type (a rule over a type a workspace does not use says nothing of its objects). " +
	"It takes effect only while the webhook defers deletions: `webhook.deferred_deletion` on `depctrl_runtime` (`--deferred-deletion`) and " +
	"`deferred_deletion` on every `depctrl_shard`; otherwise a refused deletion is only refused. See the deferred deletion guide. " +
	"Default `false`: only objects annotated `\"true\"`, or in a namespace that is, are deferred. Changing it updates the rule in place."

func (r *dependencyRuleResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	req := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Required: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A DependencyRule (`" + v1alpha1.GroupVersion.String() + "`): objects of the `dependent` type reference objects of each " +
			"`dependency` type by name, so the webhook refuses to delete a referenced object while a dependent in the same consumer " +
			"workspace still names it. The rule lives in an API provider's workspace that binds the dep-ctrl export " +
			"(`depctrl_provider_binding`).\n\n" +
			"Every field is validated at plan time with the attribute named in the error. With `wait_for_enforcement` (the default), " +
			"apply returns only when the rule's status says the webhook enforces this generation, and fails with the rule's own " +
			"condition message otherwise (a dependency cycle, a type the named export does not serve, a field path a subresource of the " +
			"dependent type writes, a workspace that does not exist, " +
			"a workspace that has not bound the export or accepted its claims), naming the attribute when the condition does.\n\n" +
			"A new rule, or one whose `dependent` or `dependency` changes, is also checked at plan against the exports it names, read with the provider's own credentials: a " +
			"group, resource, version or kind the export does not serve, a field path the dependent's structural schema does not " +
			"have, or one in what a subresource of the dependent type writes, fails the plan on that attribute. So does a rule that " +
			"would close a dependency cycle, on the `dependency` that closes it, naming the rules on the cycle: it is checked against " +
			"the other rules of the installation, those kcp holds (read through the dep-ctrl export's virtual workspaces, which the " +
			"provider's credentials must reach as the runtime's do) and those the same plan creates, changes or deletes. What the " +
			"provider cannot read at plan is left to the controller.\n\n" +
			"A changed `dependent`, `dependency` or `defer_deletion` updates the rule in place; the webhook applies the change without a restart.\n\n" +
			"Destroy deletes the rule and then waits, within the delete timeout, until the controller has removed what it " +
			"installed for it: the rule's entry in the reference index configuration of its workspace, and the deletion webhook " +
			"entries for its protected types in the workspaces of their exports (entries another rule of the same workspace still " +
			"needs stay). If that does not happen in time (the runtime is not running), destroy succeeds with a warning that names " +
			"what is left.",
		Attributes: map[string]schema.Attribute{
			"id":             importIDAttribute(workspaceObjectIDDoc),
			"workspace_path": workspacePathAttribute("The workspace that holds the rule: an API provider's workspace that binds the dep-ctrl export."),
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "The rule name.",
				Validators: []validator.String{
					stringvalidator.LengthBetween(1, 253),
					objectNameValidator("must be a lowercase DNS subdomain such as vm-needs-vpc"),
				},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"defer_deletion": schema.BoolAttribute{
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(false),
				MarkdownDescription: deferDeletionDoc,
			},
			"wait_for_enforcement": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(true),
				MarkdownDescription: "Wait after create and update until the webhook enforces the rule (`Ready=True` for its generation). Default `true`. " +
					"A rule created over a type whose objects are settled (`settle_objects` on `depctrl_runtime`) is `Ready` once the objects settled " +
					"before it have been proven under it: the webhook's `--settle-after` and 40 s, about 2 minutes by default (`Settling` meanwhile). " +
					"With it, a rule in state that the controller reports not enforced (refresh reads `ready = false` and conditions, such as while " +
					"the controller has lost a grant it needs) plans an update of `ready` to `true`: apply waits, within the update timeout, until the " +
					"rule is enforced again. A rule without any condition (no controller has looked at it) plans no such update. " +
					"An apply that restores what protection depends on (a grant of `depctrl_root_rbac` or `depctrl_shard`) " +
					"so returns when protection is back, or fails naming the condition that holds the rule back.",
			},
			"ready": schema.BoolAttribute{
				Computed:            true,
				MarkdownDescription: "Whether the rule's `Ready` condition is `True` for its current generation.",
			},
			"conditions": schema.MapAttribute{
				Computed:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "The rule's status conditions by type, as `<status> <reason>: <message>`.",
			},
		},
		Blocks: map[string]schema.Block{
			"dependent": schema.SingleNestedBlock{
				MarkdownDescription: "The type whose objects hold the references. Every rule has exactly one: a rule without it fails at plan.",
				Validators:          []validator.Object{objectvalidator.IsRequired()},
				Attributes: map[string]schema.Attribute{
					"api_export_name": req("The APIExport that exports the dependent type, such as `compute.example.io`."),
					"group":           req("The API group, such as `compute.example.io`."),
					"version":         req("The version, such as `v1`."),
					"kind":            req("The kind, such as `VirtualMachine`."),
					"resource":        req("The plural resource, such as `virtualmachines`."),
				},
			},
			"dependency": schema.ListNestedBlock{
				MarkdownDescription: "A type the dependent references, and where in the dependent the reference is. At least one; at most 32.",
				Validators:          []validator.List{listvalidator.IsRequired(), listvalidator.SizeBetween(1, 32)},
				NestedObject: schema.NestedBlockObject{
					Attributes: map[string]schema.Attribute{
						"api_export_ref": schema.SingleNestedAttribute{
							Required:            true,
							MarkdownDescription: "The APIExport that exports the protected type: `{ path = \"root:org:network\", name = \"network.example.io\" }`. Nested paths work.",
							Attributes: map[string]schema.Attribute{
								"path": req("The workspace path of the export."),
								"name": req("The APIExport name."),
							},
						},
						"group":    req("The API group of the protected type."),
						"version":  req("The version of the protected type."),
						"resource": req("The plural resource of the protected type, such as `vpcs`."),
						"field_ref": schema.SingleNestedAttribute{
							Required: true,
							MarkdownDescription: "Where the dependent names the protected object: `{ path = \".spec.vpcRef.name\" }`. " +
								"A segment ending in `[*]` looks at every element of a list: `.spec.networks[*].vpc`. A path into `.status` of a " +
								"dependent type with a status subresource, or at the scale subresource's `specReplicasPath`, is refused (the plan " +
								"fails on it, or the rule is never `Ready`): writes there pass no webhook, so the index cannot see the reference " +
								"they make. On a type without a status " +
								"subresource `.status` is written with the object and works, but every deletion of the protected type then reads " +
								"the dependents in full, and its objects are never settled.",
							Attributes: map[string]schema.Attribute{
								"path": req("The field path."),
							},
						},
					},
				},
			},
			"timeouts": timeoutsBlock(ctx, "the {op} of the rule", map[string]time.Duration{"create": defaultRuleTimeout, "update": defaultRuleTimeout, "delete": defaultRuleDeleteTimeout}),
		},
	}
	documentSchema(ctx, &resp.Schema)
}

func (r *dependencyRuleResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = workspaceObjectIdentitySchema(
		"The path of the API provider's workspace that holds the rule, such as `root:compute`.",
		"The DependencyRule's name, such as `vm-needs-vpc`.")
}

// ValidateConfig runs the API's own validation (the one the runtime and the
// schema apply) on the configuration, and reports each problem on the
// attribute that holds it. Values not known yet are checked at apply.
func (r *dependencyRuleResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	m, ok := getModel[ruleModel](ctx, req.Config, &resp.Diagnostics)
	if !ok || m.Dependent == nil || len(m.Dependencies) == 0 {
		return
	}
	spec, unknown := m.spec()
	for _, e := range spec.Validate(field.NewPath("spec")) {
		if unknown[e.Field] {
			continue
		}
		p := attributePath(e.Field)
		resp.Diagnostics.AddAttributeError(p, "Invalid DependencyRule", p.String()+": "+e.ErrorBody())
	}
}

// spec converts the model; unknown lists the spec field paths whose values
// are not known yet.
func (m *ruleModel) spec() (v1alpha1.DependencyRuleSpec, map[string]bool) {
	unknown := map[string]bool{}
	val := func(p string, s types.String) string {
		if s.IsUnknown() {
			unknown[p] = true
		}
		return s.ValueString()
	}
	var spec v1alpha1.DependencyRuleSpec
	if d := m.Dependent; d != nil {
		spec.Dependent = v1alpha1.Dependent{
			APIExportName: val("spec.dependent.apiExportName", d.APIExportName),
			Group:         val("spec.dependent.group", d.Group),
			Version:       val("spec.dependent.version", d.Version),
			Kind:          val("spec.dependent.kind", d.Kind),
			Resource:      val("spec.dependent.resource", d.Resource),
		}
	}
	for i, d := range m.Dependencies {
		p := fmt.Sprintf("spec.dependencies[%d].", i)
		dep := v1alpha1.Dependency{
			Group:    val(p+"group", d.Group),
			Version:  val(p+"version", d.Version),
			Resource: val(p+"resource", d.Resource),
		}
		if d.APIExportRef != nil {
			dep.APIExportRef = v1alpha1.APIExportRef{Path: val(p+"apiExportRef.path", d.APIExportRef.Path), Name: val(p+"apiExportRef.name", d.APIExportRef.Name)}
		} else {
			unknown[p+"apiExportRef.path"], unknown[p+"apiExportRef.name"] = true, true
		}
		if d.FieldRef != nil {
			dep.FieldRef = v1alpha1.FieldRef{Path: val(p+"fieldRef.path", d.FieldRef.Path)}
		} else {
			unknown[p+"fieldRef.path"] = true
		}
		spec.Dependencies = append(spec.Dependencies, dep)
	}
	// Null (a configuration that leaves it to its default before the plan
	// fills that in) is false, as the API's omitted field is.
	if m.DeferDeletion.IsUnknown() {
		unknown[deferDeletionField] = true
	}
	spec.DeferDeletion = m.DeferDeletion.ValueBool()
	return spec, unknown
}

// deferDeletionField is the spec field path of defer_deletion.
const deferDeletionField = "spec.deferDeletion"

var (
	fieldSegmentRE = regexp.MustCompile(`^([A-Za-z]+)(?:\[(\d+)\])?$`)
	// attributeNames maps API field names to HCL attribute names.
	attributeNames = map[string]string{
		"apiExportName": "api_export_name",
		"apiExportRef":  "api_export_ref",
		"fieldRef":      "field_ref",
		"dependencies":  "dependency",
		"deferDeletion": "defer_deletion",
	}
)

// attributePath turns an API field path such as
// spec.dependencies[0].fieldRef.path into the HCL attribute path.
func attributePath(fieldPath string) path.Path {
	segments := strings.Split(strings.TrimPrefix(fieldPath, "spec."), ".")
	var p path.Path
	for i, seg := range segments {
		m := fieldSegmentRE.FindStringSubmatch(seg)
		if m == nil {
			break
		}
		name := m[1]
		if n, ok := attributeNames[name]; ok {
			name = n
		}
		if i == 0 {
			p = path.Root(name)
		} else {
			p = p.AtName(name)
		}
		if m[2] != "" {
			idx, _ := strconv.Atoi(m[2])
			p = p.AtListIndex(idx)
		}
	}
	return p
}

func (m *ruleModel) object() *v1alpha1.DependencyRule {
	spec, _ := m.spec()
	return &v1alpha1.DependencyRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DependencyRule"},
		ObjectMeta: metav1.ObjectMeta{Name: m.Name.ValueString()},
		Spec:       spec,
	}
}

// applyConfiguration is rule as the provider applies it: with
// spec.deferDeletion even when false, which the typed field omits.
// Server-side apply leaves a field that the applied configuration leaves
// out to whoever set it, so without it a deferDeletion set to true by hand
// would survive the apply meant to reset it; with it, the provider owns the
// field, and the forced apply resets it as it does a changed field path.
func applyConfiguration(rule *v1alpha1.DependencyRule) (*unstructured.Unstructured, error) {
	u, err := toUnstructured(rule)
	if err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(u, rule.Spec.DeferDeletion, "spec", "deferDeletion"); err != nil {
		return nil, fmt.Errorf("setting spec.deferDeletion of DependencyRule %s: %w", rule.Name, err)
	}
	return &unstructured.Unstructured{Object: u}, nil
}

// setFrom copies the rule's spec and status into m.
func (m *ruleModel) setFrom(rule *v1alpha1.DependencyRule) {
	d := rule.Spec.Dependent
	m.Dependent = &ruleDependentModel{
		APIExportName: types.StringValue(d.APIExportName),
		Group:         types.StringValue(d.Group),
		Version:       types.StringValue(d.Version),
		Kind:          types.StringValue(d.Kind),
		Resource:      types.StringValue(d.Resource),
	}
	m.Dependencies = nil
	for _, dep := range rule.Spec.Dependencies {
		m.Dependencies = append(m.Dependencies, ruleDependencyModel{
			APIExportRef: &ruleExportRefModel{Path: types.StringValue(dep.APIExportRef.Path), Name: types.StringValue(dep.APIExportRef.Name)},
			Group:        types.StringValue(dep.Group),
			Version:      types.StringValue(dep.Version),
			Resource:     types.StringValue(dep.Resource),
			FieldRef:     &ruleFieldRefModel{Path: types.StringValue(dep.FieldRef.Path)},
		})
	}
	// Always known: a rule written before the field existed, or by an older
	// provider, has none, which is false. So a state without the attribute
	// refreshes to false, which a configuration without it plans too.
	m.DeferDeletion = types.BoolValue(rule.Spec.DeferDeletion)
	conds := map[string]string{}
	for _, c := range rule.Status.Conditions {
		conds[c.Type] = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
	}
	m.Conditions = stringMap(conds)
	m.Ready = types.BoolValue(enforced(rule))
}

// enforced reports whether the webhook enforces the rule's current spec.
func enforced(rule *v1alpha1.DependencyRule) bool {
	c := meta.FindStatusCondition(rule.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == rule.Generation && rule.Status.ObservedGeneration == rule.Generation
}

func (r *dependencyRuleResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.write(ctx, req.Plan, timeouts.Value.Create, &resp.State, resp.Identity, &resp.Diagnostics)
}

func (r *dependencyRuleResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.write(ctx, req.Plan, timeouts.Value.Update, &resp.State, resp.Identity, &resp.Diagnostics)
}

// write is Create and Update: apply the planned rule within op's timeout
// and save it in state.
func (r *dependencyRuleResource) write(ctx context.Context, from modelSource, op timeoutOp, state *tfsdk.State, identity *tfsdk.ResourceIdentity, diags *diagnostics) {
	plan, timeout, ok := getTimed[ruleModel](ctx, from, op, defaultRuleTimeout, diags)
	if !ok {
		return
	}
	r.apply(ctx, &plan, timeout, diags, func() {
		saveState(ctx, state, identity, &plan, plan.identity(), diags)
	})
}

// apply writes the rule and, if asked, waits until it is enforced. save
// records state once the rule exists, so that a failed wait leaves the
// rule in state (tainted) rather than orphaned.
func (r *dependencyRuleResource) apply(ctx context.Context, m *ruleModel, timeout time.Duration, diags *diagnostics, save func()) {
	ws := m.WorkspacePath.ValueString()
	client, ok := r.conn.dynamicIn(ws, diags)
	if !ok {
		return
	}
	rule := m.object()
	if errs := rule.Validate(); len(errs) > 0 {
		// Values that were unknown at plan time are checked here.
		for _, e := range errs {
			p := attributePath(e.Field)
			diags.AddAttributeError(p, "Invalid DependencyRule", p.String()+": "+e.ErrorBody())
		}
		return
	}
	tflog.Info(ctx, "applying DependencyRule", map[string]interface{}{"workspace": ws, "rule": rule.Name})
	applied, err := applyConfiguration(rule)
	if err != nil {
		diags.AddError("Cannot encode DependencyRule", err.Error())
		return
	}
	if err := applyObjects(ctx, client, object{v1alpha1.GroupVersionResource, applied}); err != nil {
		if apierrors.IsNotFound(err) && firstMissing(ctx, r.conn, ws) == "" {
			diags.AddAttributeError(path.Root("workspace_path"), "DependencyRules not available",
				fmt.Sprintf("workspace %q does not serve %s: it has not bound the dep-ctrl export. Add a depctrl_provider_binding for it, and make this rule depend on it.", ws, v1alpha1.GroupVersionResource.GroupResource()))
			return
		}
		diags.Append(explainIn(ctx, r.conn, ws, fmt.Sprintf("applying DependencyRule %q in %s", rule.Name, ws), err))
		return
	}
	m.ID = types.StringValue(ws + "/" + rule.Name)
	written, err := r.read(ctx, client, m)
	if err != nil {
		diags.Append(explainIn(ctx, r.conn, ws, "reading DependencyRule "+rule.Name, err))
		return
	}
	if dropped := droppedFields(rule.Spec, written); len(dropped) > 0 {
		// The state holds the rule as kcp keeps it, so the next plan
		// shows the field again.
		save()
		for _, f := range dropped {
			p := attributePath(f)
			diags.AddAttributeError(p, "DependencyRule field not kept", fmt.Sprintf(
				"%s: kcp did not keep %s on DependencyRule %q in %s: the dep-ctrl export serves a DependencyRule schema older than this "+
					"provider, which lacks the field, and kcp dropped it. Apply depctrl_export with this provider version first "+
					"(its schema_name changes), then this rule.", p, f, rule.Name, ws))
		}
		return
	}
	if !m.WaitForEnforcement.ValueBool() {
		save()
		return
	}
	var last *v1alpha1.DependencyRule
	// The controller and the webhook report through the rule's status:
	// check it on each change, not only at each poll.
	changed, stopWatch := wakeOnChange(ctx, client.Resource(v1alpha1.GroupVersionResource), rule.Name)
	defer stopWatch()
	err = waitUntilWoken(ctx, timeout, fmt.Sprintf("DependencyRule %q in %s to be enforced", rule.Name, ws), changed, func(ctx context.Context) (bool, string, error) {
		got, err := r.read(ctx, client, m)
		if err != nil || got == nil {
			return false, "", err
		}
		last = got
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAcyclic); c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == got.Generation {
			// A cycle does not resolve itself; the configuration must change.
			return false, "", permanent(fmt.Errorf("%s: %s", c.Reason, c.Message))
		}
		if c := servedFailure(got); c != nil && c.Reason != v1alpha1.ReasonExportNotFound {
			// Nor does a type the export does not serve. An export not
			// found yet may still be on its way.
			return false, "", permanent(fmt.Errorf("%s: %s", c.Reason, c.Message))
		}
		return enforced(got), ruleState(got), nil
	})
	save()
	if err != nil && last != nil && servedFailure(last) != nil {
		addServedDiagnostics(servedFailure(last), diags)
		return
	}
	if err != nil {
		detail := err.Error()
		if last != nil && len(last.Status.Conditions) == 0 {
			detail += ". The rule has no status at all: is the depctrl controller running, and started with this export?"
		}
		diags.AddError("DependencyRule not enforced", detail)
	}
}

// droppedFields returns the spec fields, as API field paths, that want sets
// and kcp did not keep in got (nil when the rule is gone). kcp prunes the
// fields the schema its export serves does not have, and the write
// succeeds without them: so an export that still serves a schema from
// before a field existed drops it, and the rule would silently not do
// what the configuration says. Only fields added to the API later can be
// dropped so; deferDeletion is one.
func droppedFields(want v1alpha1.DependencyRuleSpec, got *v1alpha1.DependencyRule) []string {
	if got == nil {
		return nil
	}
	var dropped []string
	if want.DeferDeletion && !got.Spec.DeferDeletion {
		dropped = append(dropped, deferDeletionField)
	}
	return dropped
}

// ruleState describes why a rule is not enforced yet, from its conditions.
func ruleState(rule *v1alpha1.DependencyRule) string {
	var parts []string
	for _, c := range rule.Status.Conditions {
		if c.Type != v1alpha1.ConditionReady && c.Status != metav1.ConditionTrue {
			parts = append(parts, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	if len(parts) == 0 {
		if c := meta.FindStatusCondition(rule.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			return fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
		}
		return "no status yet"
	}
	return strings.Join(parts, "; ")
}

// read fills m from kcp and returns the rule, or nil when it is gone.
func (r *dependencyRuleResource) read(ctx context.Context, client dynamic.Interface, m *ruleModel) (*v1alpha1.DependencyRule, error) {
	var rule v1alpha1.DependencyRule
	found, err := getObject(ctx, client, v1alpha1.GroupVersionResource, m.Name.ValueString(), &rule)
	if err != nil || !found {
		return nil, err
	}
	m.setFrom(&rule)
	return &rule, nil
}

func (r *dependencyRuleResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	state, ok := getModel[ruleModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	readWorkspaceObject(ctx, r.conn, resp, &state, state.identity(), "DependencyRule", "reading DependencyRule "+state.Name.ValueString(), func(client dynamic.Interface) (bool, error) {
		rule, err := r.read(ctx, client, &state)
		state.fillAddedAttributes()
		return rule != nil, err
	})
}

// fillAddedAttributes sets the provider-side attributes that a state written
// by an older provider lacks (null) to their defaults, so that the next
// plan shows no change for a configuration that does not set them:
// wait_for_enforcement to true. Attributes of the spec, such as
// defer_deletion, need no filling: refresh reads them from the rule
// (setFrom), where a rule written without deferDeletion has it false.
func (m *ruleModel) fillAddedAttributes() {
	if m.WaitForEnforcement.IsNull() {
		m.WaitForEnforcement = types.BoolValue(true)
	}
}

func (r *dependencyRuleResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, timeout, ok := getTimed[ruleModel](ctx, req.State, timeouts.Value.Delete, defaultRuleDeleteTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	ws := state.WorkspacePath.ValueString()
	client, ok := r.conn.dynamicIn(ws, &resp.Diagnostics)
	if !ok {
		return
	}
	name := state.Name.ValueString()
	deadline := time.Now().Add(timeout)
	// What the controller installed for the rule follows the rule as it
	// is, not as the state last saw it.
	var live v1alpha1.DependencyRule
	found, err := getObject(ctx, client, v1alpha1.GroupVersionResource, name, &live)
	if err != nil {
		if workspaceGone(ctx, r.conn, ws, err) {
			return
		}
		resp.Diagnostics.Append(explainIn(ctx, r.conn, ws, "reading DependencyRule "+name, err))
		return
	}
	tflog.Info(ctx, "deleting DependencyRule", map[string]interface{}{"workspace": ws, "rule": name})
	if err := deleteObjects(ctx, client, timeout, object{v1alpha1.GroupVersionResource, state.object()}); err != nil {
		if workspaceGone(ctx, r.conn, ws, err) {
			return
		}
		resp.Diagnostics.Append(explainIn(ctx, r.conn, ws, "deleting DependencyRule "+name, err))
		return
	}
	if !found {
		return
	}
	// The controller removes the webhook configuration entries it made
	// for the rule once it sees the rule gone. Return only then, so that
	// whatever is destroyed next (the bindings, the runtime) finds nothing
	// of this rule left.
	fp := footprintOf(ws, &live)
	left, err := fp.waitForCleanup(ctx, max(time.Until(deadline), time.Second), r.conn)
	switch {
	case err != nil:
		resp.Diagnostics.AddWarning("Could not check that the controller removed the rule's webhooks",
			fmt.Sprintf("DependencyRule %q in %s is deleted, but reading what the controller installed for it failed: %v. "+
				"The controller removes its webhook configuration entries when it sees the rule gone; destroying a workspace's "+
				"depctrl_provider_binding removes any it left there.", name, ws, err))
	case len(left) > 0:
		tflog.Warn(ctx, "the controller did not remove what it installed for the rule", map[string]interface{}{"rule": name, "left": left})
		resp.Diagnostics.AddWarning("The controller has not removed the rule's webhooks",
			fmt.Sprintf("DependencyRule %q in %s is deleted, but within the delete timeout (%s) the controller did not remove what it "+
				"installed for it: %s. Is the runtime running? The controller removes them when it next runs. Until then the deletes "+
				"and writes they cover still go to the webhook, and are refused while it does not answer. Destroying the "+
				"depctrl_provider_binding of such a workspace removes the controller's configurations there.",
				name, ws, timeout, strings.Join(left, "; ")))
	}
}

// ImportState takes <workspace path>/<rule name>, or the identity.
func (r *dependencyRuleResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importWorkspaceObject(ctx, req, resp, "rule", "root:compute/vm-needs-vpc")
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("wait_for_enforcement"), true)...)
	}
}
