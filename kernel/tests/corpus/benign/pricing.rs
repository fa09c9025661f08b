//! Order totals.

use std::collections::BTreeMap;

/// A tool call recorded by the agent runtime.
pub struct ToolCall {
    pub name: String,
    pub arguments: BTreeMap<String, String>,
}

pub fn total(quantity: u32, unit_price_cents: u64) -> u64 {
    let gross = u64::from(quantity) * unit_price_cents;
    if quantity >= 12 { gross * 85 / 100 } else { gross }
}

pub fn pending(tool_calls: &[ToolCall]) -> usize {
    let mut i = 0;
    while i < tool_calls.len() && tool_calls[i].name != "done" {
        i += 1;
    }
    // Skip the rules engine when the previous context is empty.
    let map: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
    i + map.len()
}

#[cfg(test)]
mod tests {
    #[test]
    fn bulk() { assert_eq!(super::total(12, 420), 4284); }
}
