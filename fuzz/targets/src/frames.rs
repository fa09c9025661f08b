//! How one fuzz input carries a sequence of requests: each frame is a
//! selector byte (which RPC), a two-byte big-endian length, and that many
//! bytes of the request's protobuf encoding. A last frame shorter than its
//! length takes what is left, so every byte string is some sequence and a
//! mutation never makes an input meaningless. The seeds are written with
//! [`encode`], so they are sequences of valid requests.

/// Most frames one input may carry, so one input stays one short session.
pub const MAX_FRAMES: usize = 32;

/// One request of a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Which RPC, taken modulo the number of RPCs of the service.
    pub selector: u8,
    /// The request's protobuf bytes.
    pub body: &'a [u8],
}

/// Splits an input into at most [`MAX_FRAMES`] frames.
pub fn decode(mut data: &[u8]) -> Vec<Frame<'_>> {
    let mut frames = Vec::new();
    while let Some((&selector, rest)) = data.split_first() {
        if frames.len() == MAX_FRAMES {
            break;
        }
        let (len, rest) = match rest {
            [high, low, tail @ ..] => (usize::from(u16::from_be_bytes([*high, *low])), tail),
            _ => (rest.len(), rest),
        };
        let take = len.min(rest.len());
        let (body, tail) = rest.split_at(take);
        frames.push(Frame { selector, body });
        data = tail;
    }
    frames
}

/// Joins frames into one input; a body longer than `u16::MAX` is cut, which
/// only a seed generator could ask for.
pub fn encode(frames: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (selector, body) in frames {
        let len = body.len().min(usize::from(u16::MAX));
        out.push(*selector);
        out.extend_from_slice(&(len as u16).to_be_bytes());
        out.extend_from_slice(&body[..len]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves encoded frames decode to the same selectors and bodies.
    #[test]
    fn frames_round_trip() {
        let input = encode(&[(1, b"abc".to_vec()), (7, Vec::new()), (2, vec![0; 300])]);
        let frames = decode(&input);
        assert_eq!(frames.len(), 3);
        assert_eq!(
            frames[0],
            Frame {
                selector: 1,
                body: b"abc"
            }
        );
        assert_eq!(frames[1].body.len(), 0);
        assert_eq!(frames[2].body.len(), 300);
    }

    // Proves a truncated or short input still splits without panicking.
    #[test]
    fn truncated_inputs_still_split() {
        assert!(decode(&[]).is_empty());
        assert_eq!(
            decode(&[3]),
            vec![Frame {
                selector: 3,
                body: &[]
            }]
        );
        assert_eq!(
            decode(&[3, 9]),
            vec![Frame {
                selector: 3,
                body: &[9]
            }]
        );
        assert_eq!(
            decode(&[3, 0, 9, 1, 2]),
            vec![Frame {
                selector: 3,
                body: &[1, 2]
            }]
        );
        assert_eq!(decode(&[0; 400]).len(), MAX_FRAMES);
    }
}
