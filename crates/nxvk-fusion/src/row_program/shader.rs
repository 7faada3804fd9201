//! The GLSL of a row program (see `row_program.rs`).
//!
//! Workgroups take groups of rows in a grid-stride loop, one team per row. Each invocation
//! holds packets `lane + i * team` (i < packets per lane) of its row's leaves: loaded with one
//! vector access per leaf in the packet variant, element by element through the generic
//! addressing in the generic variant (one kernel per path, see `row_program.rs`). A held
//! reduction's phase stores each input value it folds in `held<k>`, which the later phases
//! pass to `nx_element` in place of computing it. The expression's one `nx_element` function computes every root of
//! the program from those values and the reductions finished so far (module variables
//! `reduced<k>`, in their stored type); each phase uses one of its roots and the compiler
//! drops the rest. A phase folds its reduction over the invocation's elements, then over the
//! team ([`TEAM_FOLD`]), then computes the row-uniform values that waited for it (those that
//! wait for none run once, before the row loop); the output phase stores each root once. The loop over rows is
//! uniform across the workgroup (teams past the last row fold identities), so barriers inside
//! the folds are reached by every invocation.

use super::{RowReduction, TeamShape};
use crate::codegen::{
    Expression, RowTeam, common_functions, fold_element, shuffle_function, team_fold,
};
use nxvk_kernels::codegen::{compute_type, storage_bytes, storage_type, store};
use nxvk_kernels::reduce::fold;
use nxvk_kernels::{Elem, PACKET_ELEMENTS, packet_type};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The fold of `value` over a team of `NX_TEAM_SIZE` invocations (every invocation gets the
/// result): a butterfly within each aligned block of `min(team, subgroup)` invocations, then,
/// for teams wider than a subgroup, the subgroups' results through shared memory in a fixed
/// order (so every invocation folds the same values the same way). Written for any subgroup
/// size, since a device may run the kernel with another than the one it reports.
const TEAM_FOLD: &str = "V nx_team_fold(V value) {
    uint width = min(NX_TEAM_SIZE, gl_SubgroupSize);
    for (uint mask = width >> 1u; mask > 0u; mask >>= 1u) value = nx_fold(value, nx_shuffle_xor(value, mask));
    if (NX_TEAM_SIZE > gl_SubgroupSize) {
        if (gl_SubgroupInvocationID == 0u) partial[gl_SubgroupID] = value;
        barrier();
        uint subgroups = NX_TEAM_SIZE / gl_SubgroupSize;
        uint first = (gl_LocalInvocationID.x / NX_TEAM_SIZE) * subgroups;
        value = partial[first];
        for (uint subgroup = 1u; subgroup < subgroups; subgroup++) value = nx_fold(value, partial[first + subgroup]);
        barrier();
    }
    return value;
}
";

/// What a row program's shader is generated from.
pub(crate) struct RowProgramSource<'a> {
    /// Roots: each reduction's input, then the outputs.
    pub expression: &'a Expression,
    pub reductions: &'a [RowReduction],
    pub outputs: &'a [Elem],
    pub team: TeamShape,
    /// Reductions whose input values phase `k` keeps (in `held<k>`) for the later phases.
    pub held: &'a [usize],
    pub row_length: usize,
    /// The packet variant (vector loads and stores; the executor runs it where the packet
    /// conditions hold), else the generic one (element by element, any layout).
    pub packet_path: bool,
}

/// Reduction `k`'s fold functions (`nxr<k>_identity`, `nxr<k>_fold`, `nxr<k>_team_fold`) and
/// its shared array, renamed so that several reductions of different types share a kernel.
fn fold_block(k: usize, reduction: &RowReduction, subgroup_fold: bool) -> String {
    let value_type = compute_type(reduction.accumulator);
    let (identity, combine) = fold(reduction.op, value_type, reduction.input_elem.is_float());
    let team_fold = if subgroup_fold {
        format!("{}{TEAM_FOLD}", shuffle_function(value_type))
    } else {
        team_fold(RowTeam::WorkgroupTree, value_type).0
    };
    format!(
        "#define V {value_type}
#define IDENTITY {identity}
shared V partial[WORKGROUP_SIZE];
V nx_identity() {{ return IDENTITY; }}
V nx_fold(V a, V b) {{ return {combine}; }}
{team_fold}#undef V
#undef IDENTITY
"
    )
    .replace("nx_", &format!("nxr{k}_"))
    .replace("partial", &format!("partial{k}"))
}

/// The whole shader of a row program.
pub(crate) fn row_program_shader(source: &RowProgramSource<'_>) -> String {
    let RowProgramSource {
        expression,
        reductions,
        outputs,
        team,
        held,
        row_length,
        packet_path,
    } = *source;
    let stored: BTreeSet<Elem> = outputs.iter().copied().collect();
    let mut shader = String::from("#extension GL_EXT_control_flow_attributes : require\n");
    shader.push_str(&expression.declarations(&stored));
    // The reductions' results, read by `nx_element`.
    for (k, reduction) in reductions.iter().enumerate() {
        let _ = writeln!(shader, "{} reduced{k};", storage_type(reduction.result));
    }
    shader.push_str(&expression.uniform_declarations());
    shader.push_str(&common_functions(expression, packet_path));
    let _ = write!(
        shader,
        "#define WORKGROUP_SIZE {workgroup}u
#define NX_TEAM_SIZE {team_size}u
#define NX_ROW_LENGTH {row_length}u
#define NX_PACKETS_PER_LANE {packets_per_lane}u
layout(local_size_x = {workgroup}) in;
",
        workgroup = team.workgroup,
        team_size = team.size,
        packets_per_lane = team.packets_per_lane,
    );
    for (k, reduction) in reductions.iter().enumerate() {
        shader.push_str(&fold_block(k, reduction, team.subgroup_fold));
    }

    let leaf_elems = expression.leaf_elems();
    let mut held_packets = String::new();
    let mut held_arrays = String::new();
    let mut generic_loads = String::new();
    for (slot, elem) in leaf_elems.iter().enumerate() {
        let _ = writeln!(
            held_packets,
            "        {} packet{slot}[NX_PACKETS_PER_LANE];",
            packet_type(*elem)
        );
        let _ = writeln!(
            generic_loads,
            "                packet{slot}[held][lane_of_packet] = In_{}(in{slot} + uint64_t(idx{slot}) * {}ul).v;",
            elem.name(),
            storage_bytes(*elem)
        );
    }
    for &k in held {
        let _ = writeln!(
            held_arrays,
            "        {} held{k}[NX_PACKETS_PER_LANE * {PACKET_ELEMENTS}u];",
            compute_type(reductions[k].input_elem)
        );
    }
    // Phase `phase` passes the values the earlier phases kept; the output phase passes all.
    let call_in_phase = |phase: usize| {
        expression.call_holding(
            |slot, _| format!("packet{slot}[held][lane_of_packet]"),
            |slot| {
                (held[slot] < phase).then(|| {
                    format!(
                        "held{}[held * {PACKET_ELEMENTS}u + lane_of_packet]",
                        held[slot]
                    )
                })
            },
        )
    };
    let mut phases = String::new();
    for (k, reduction) in reductions.iter().enumerate() {
        let keep = if held.contains(&k) {
            format!("held{k}[held * {PACKET_ELEMENTS}u + lane_of_packet] = result{k};")
        } else {
            String::new()
        };
        let _ = write!(
            phases,
            "#define V {value_type}
        {{
            // One accumulator per packet lane: four independent chains of folds.
            V lanes[{PACKET_ELEMENTS}];
            [[unroll]] for (uint lane_of_packet = 0u; lane_of_packet < {PACKET_ELEMENTS}u; lane_of_packet++) lanes[lane_of_packet] = nxr{k}_identity();
            [[unroll]] for (uint held = 0u; held < NX_PACKETS_PER_LANE; held++) {{
                [[unroll]] for (uint lane_of_packet = 0u; lane_of_packet < {PACKET_ELEMENTS}u; lane_of_packet++) {{
                    uint column = (lane + held * NX_TEAM_SIZE) * {PACKET_ELEMENTS}u + lane_of_packet;
                    if (row_active && column < NX_ROW_LENGTH) {{
                        {call}
                        {keep}
                        lanes[lane_of_packet] = nxr{k}_fold(lanes[lane_of_packet], {element});
                    }}
                }}
            }}
            V value = nxr{k}_fold(nxr{k}_fold(lanes[0], lanes[1]), nxr{k}_fold(lanes[2], lanes[3]));
            value = nxr{k}_team_fold(value);
            reduced{k} = {stored};
{uniform}        }}
#undef V
",
            value_type = compute_type(reduction.accumulator),
            call = call_in_phase(k),
            element = fold_element(reduction.op, reduction.input_elem, &format!("result{k}")),
            stored = store(reduction.result, "value"),
            uniform = expression.uniform_statements(k + 1),
        );
    }
    let mut output_arrays = String::new();
    let mut output_values = String::new();
    let mut packet_stores = String::new();
    let mut scalar_stores = String::new();
    for (output, elem) in outputs.iter().enumerate() {
        let root = reductions.len() + output;
        let name = elem.name();
        let _ = writeln!(
            output_arrays,
            "            {} stored{output};",
            packet_type(*elem)
        );
        let _ = writeln!(
            output_values,
            "                stored{output}[lane_of_packet] = {};",
            store(*elem, &format!("result{root}"))
        );
        let _ = writeln!(
            packet_stores,
            "                OutPacket_{name}(out{output} + element * {}ul).v = stored{output};",
            storage_bytes(*elem)
        );
        let _ = writeln!(
            scalar_stores,
            "                Out_{name}(out{output} + (element + lane_of_packet) * {}ul).v = stored{output}[lane_of_packet];",
            storage_bytes(*elem)
        );
    }
    // One variant per path (the executor picks per run): the generic path's addressing
    // beside the packets cost registers the packets need (a kernel holding both ran
    // softmax's row program 1.8x slower than the packet path alone on the H200, even with
    // the generic path never taken).
    let (packet_preamble, loads, stores) = if packet_path {
        (
            expression.packet_preamble(),
            expression.packet_loads("[held]", "row", "column"),
            packet_stores,
        )
    } else {
        let loads = format!(
            "                [[unroll]] for (uint lane_of_packet = 0u; lane_of_packet < {PACKET_ELEMENTS}u; lane_of_packet++) {{
                    if (column + lane_of_packet < NX_ROW_LENGTH) {{
                        uint index = row * NX_ROW_LENGTH + column + lane_of_packet;
{indices}{generic_loads}                    }}
                }}
",
            indices = expression.indices(),
        );
        let stores = format!(
            "                [[unroll]] for (uint lane_of_packet = 0u; lane_of_packet < {PACKET_ELEMENTS}u; lane_of_packet++) {{
                    if (column + lane_of_packet < NX_ROW_LENGTH) {{
{scalar_stores}                    }}
                }}
"
        );
        (String::new(), loads, stores)
    };
    let _ = write!(
        shader,
        "void main() {{
{preamble}{packet_preamble}{constant_uniform}    uint lane = gl_LocalInvocationID.x % NX_TEAM_SIZE;
    uint rows_per_group = WORKGROUP_SIZE / NX_TEAM_SIZE;
    for (uint first_row = gl_WorkGroupID.x * rows_per_group; first_row < push.count; first_row += gl_NumWorkGroups.x * rows_per_group) {{
        uint row = first_row + gl_LocalInvocationID.x / NX_TEAM_SIZE;
        bool row_active = row < push.count;
{packet_arrays}{held_arrays}        [[unroll]] for (uint held = 0u; held < NX_PACKETS_PER_LANE; held++) {{
            uint column = (lane + held * NX_TEAM_SIZE) * {PACKET_ELEMENTS}u;
            if (row_active && column < NX_ROW_LENGTH) {{
{loads}            }}
        }}
{phases}        [[unroll]] for (uint held = 0u; held < NX_PACKETS_PER_LANE; held++) {{
            uint column = (lane + held * NX_TEAM_SIZE) * {PACKET_ELEMENTS}u;
            if (row_active && column < NX_ROW_LENGTH) {{
                uint64_t element = uint64_t(row) * uint64_t(NX_ROW_LENGTH) + uint64_t(column);
{output_arrays}                [[unroll]] for (uint lane_of_packet = 0u; lane_of_packet < {PACKET_ELEMENTS}u; lane_of_packet++) {{
                    {output_call}
{output_values}                }}
{stores}            }}
        }}
    }}
}}
",
        packet_arrays = held_packets,
        output_call = call_in_phase(reductions.len()),
        preamble = expression.preamble(outputs.len()),
        constant_uniform = expression.uniform_statements(0),
    );
    shader
}
