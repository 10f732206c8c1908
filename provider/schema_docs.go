package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/defaults"
)

// documentSchema completes every configurable attribute's description with
// its default and with what a plan does when it changes, derived from the
// schema itself (its Default and its RequiresReplace plan modifiers), so
// the documentation cannot drift from the behaviour. A description that
// already says it ("default", "replaces", "in place") is left alone.
func documentSchema(ctx context.Context, s *schema.Schema) {
	for name, a := range s.Attributes {
		s.Attributes[name] = documentAttribute(ctx, a, false)
	}
	for name, b := range s.Blocks {
		s.Blocks[name] = documentBlock(ctx, b, false)
	}
}

// timeoutsBlock is the timeouts block with one attribute per operation in
// defaults, each saying what it bounds and its default.
func timeoutsBlock(ctx context.Context, what string, defaults map[string]time.Duration) schema.Block {
	b := timeouts.Block(ctx, timeouts.Opts{Create: defaults["create"] > 0, Update: defaults["update"] > 0, Delete: defaults["delete"] > 0})
	nb, ok := b.(schema.SingleNestedBlock)
	if !ok {
		return b
	}
	ops := make([]string, 0, len(defaults))
	for op := range defaults {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		a, ok := nb.Attributes[op].(schema.StringAttribute)
		if !ok {
			continue
		}
		a.Description = ""
		a.MarkdownDescription = fmt.Sprintf("How long %s may take, as a duration such as `30s` or `5m`. Default `%s`. Changing it only changes the state.",
			strings.ReplaceAll(what, "{op}", op), shortDuration(defaults[op]))
		nb.Attributes[op] = a
	}
	nb.MarkdownDescription = "Bounds on how long Terraform waits."
	return nb
}

// timeoutsOnly is the Blocks of a resource whose only block is its
// timeouts block (timeoutsBlock).
func timeoutsOnly(ctx context.Context, what string, defaults map[string]time.Duration) map[string]schema.Block {
	return map[string]schema.Block{"timeouts": timeoutsBlock(ctx, what, defaults)}
}

// sameTimeouts are the defaults of a resource whose create, update and
// delete each default to d.
func sameTimeouts(d time.Duration) map[string]time.Duration {
	return map[string]time.Duration{"create": d, "update": d, "delete": d}
}

// shortDuration writes d as Terraform users write durations: 10m, not
// 10m0s; 1h30m, not 1h30m0s; 45s stays 45s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func documentAttribute(ctx context.Context, a schema.Attribute, parentReplaces bool) schema.Attribute {
	switch v := a.(type) {
	case schema.StringAttribute:
		v.MarkdownDescription = documented(v, anyRequiresReplace(ctx, parentReplaces, v.PlanModifiers), stringDefault(ctx, v.Default))
		return v
	case schema.BoolAttribute:
		v.MarkdownDescription = documented(v, anyRequiresReplace(ctx, parentReplaces, v.PlanModifiers), boolDefault(ctx, v.Default))
		return v
	case schema.Int64Attribute:
		v.MarkdownDescription = documented(v, anyRequiresReplace(ctx, parentReplaces, v.PlanModifiers), int64Default(ctx, v.Default))
		return v
	case schema.ListAttribute:
		def := ""
		if v.Default != nil {
			def = "[]"
		}
		v.MarkdownDescription = documented(v, anyRequiresReplace(ctx, parentReplaces, v.PlanModifiers), def)
		return v
	case schema.SetAttribute:
		v.MarkdownDescription = documented(v, anyRequiresReplace(ctx, parentReplaces, v.PlanModifiers), "")
		return v
	case schema.MapAttribute:
		v.MarkdownDescription = documented(v, anyRequiresReplace(ctx, parentReplaces, v.PlanModifiers), "")
		return v
	case schema.SingleNestedAttribute:
		replaces := anyRequiresReplace(ctx, parentReplaces, v.PlanModifiers)
		for name, inner := range v.Attributes {
			v.Attributes[name] = documentAttribute(ctx, inner, replaces)
		}
		return v
	case schema.ListNestedAttribute:
		for name, inner := range v.NestedObject.Attributes {
			v.NestedObject.Attributes[name] = documentAttribute(ctx, inner, parentReplaces)
		}
		return v
	}
	return a
}

// documented is a's description completed with what its settings imply.
func documented(a schema.Attribute, replaces bool, def string) string {
	return complete(a.GetMarkdownDescription(), a.IsOptional() || a.IsRequired(), a.IsComputed() && !a.IsOptional(), replaces, def)
}

func documentBlock(ctx context.Context, b schema.Block, parentReplaces bool) schema.Block {
	switch v := b.(type) {
	case schema.ListNestedBlock:
		replaces := anyRequiresReplace(ctx, parentReplaces, v.PlanModifiers)
		for name, a := range v.NestedObject.Attributes {
			v.NestedObject.Attributes[name] = documentAttribute(ctx, a, replaces)
		}
		for name, inner := range v.NestedObject.Blocks {
			v.NestedObject.Blocks[name] = documentBlock(ctx, inner, replaces)
		}
		return v
	case schema.SingleNestedBlock:
		replaces := anyRequiresReplace(ctx, parentReplaces, v.PlanModifiers)
		for name, a := range v.Attributes {
			v.Attributes[name] = documentAttribute(ctx, a, replaces)
		}
		for name, inner := range v.Blocks {
			v.Blocks[name] = documentBlock(ctx, inner, replaces)
		}
		return v
	}
	return b
}

type describer interface {
	Description(context.Context) string
}

// anyRequiresReplace reports whether a change replaces the resource: the
// parent's change does, or one of the modifiers is one of the framework's
// RequiresReplace modifiers, recognized by what they say they do.
func anyRequiresReplace[M describer](ctx context.Context, parentReplaces bool, mods []M) bool {
	for _, m := range mods {
		if strings.Contains(m.Description(ctx), "destroy and recreate") {
			return true
		}
	}
	return parentReplaces
}

func boolDefault(ctx context.Context, d defaults.Bool) string {
	if d == nil {
		return ""
	}
	resp := &defaults.BoolResponse{}
	d.DefaultBool(ctx, defaults.BoolRequest{}, resp)
	return fmt.Sprint(resp.PlanValue.ValueBool())
}

func int64Default(ctx context.Context, d defaults.Int64) string {
	if d == nil {
		return ""
	}
	resp := &defaults.Int64Response{}
	d.DefaultInt64(ctx, defaults.Int64Request{}, resp)
	return fmt.Sprint(resp.PlanValue.ValueInt64())
}

func stringDefault(ctx context.Context, d defaults.String) string {
	if d == nil {
		return ""
	}
	resp := &defaults.StringResponse{}
	d.DefaultString(ctx, defaults.StringRequest{}, resp)
	return fmt.Sprintf("%q", resp.PlanValue.ValueString())
}

// complete appends the default and the change behaviour to desc unless it
// already says them. Attributes only the provider sets are left alone.
func complete(desc string, configurable, computedOnly, replaces bool, def string) string {
	if !configurable || computedOnly {
		return desc
	}
	low := strings.ToLower(desc)
	desc = strings.TrimSpace(desc)
	if def != "" && !strings.Contains(low, "default") {
		if def == `""` {
			def = "empty"
		} else {
			def = "`" + strings.Trim(def, `"`) + "`"
		}
		desc += " Default " + def + "."
	}
	if !strings.Contains(low, "replace") && !strings.Contains(low, "in place") && !strings.Contains(low, "only changes the state") {
		if replaces {
			desc += " Changing it replaces the resource."
		} else {
			desc += " Changing it updates the resource in place."
		}
	}
	return desc
}
