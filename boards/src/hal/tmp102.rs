//! TMP102 temperature sensor over [`I2c`].
//!
//! The temperature register (pointer 0) holds a 12-bit two's-complement value, left
//! aligned in two big-endian bytes; one LSB is 0.0625 °C. The driver writes the pointer
//! and reads the two bytes in one `write_read`.

use embedded_hal::i2c::{I2c, SevenBitAddress};

/// Pointer of the temperature register.
pub const REG_TEMPERATURE: u8 = 0x00;
/// Pointer of the configuration register.
pub const REG_CONFIG: u8 = 0x01;
/// Degrees Celsius per LSB of the 12-bit reading.
pub const CELSIUS_PER_LSB: f32 = 0.0625;
/// The address with ADD0 tied to ground.
pub const DEFAULT_ADDRESS: SevenBitAddress = 0x48;

/// An address that does not fit in 7 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadAddress(pub u8);

/// A TMP102 at one address on bus `I`.
#[derive(Debug)]
pub struct Tmp102<I> {
    i2c: I,
    address: SevenBitAddress,
}

impl<I: I2c> Tmp102<I> {
    /// The sensor at 7-bit `address` on `i2c`.
    pub fn new(i2c: I, address: SevenBitAddress) -> Result<Self, BadAddress> {
        if address > 0x7F {
            return Err(BadAddress(address));
        }
        Ok(Tmp102 { i2c, address })
    }

    /// Its address.
    pub fn address(&self) -> SevenBitAddress {
        self.address
    }

    /// Reads the temperature in degrees Celsius.
    pub fn read_celsius(&mut self) -> Result<f32, I::Error> {
        let mut buf = [0u8; 2];
        self.i2c
            .write_read(self.address, &[REG_TEMPERATURE], &mut buf)?;
        Ok(celsius_from_register(buf))
    }

    /// Gives the bus back.
    pub fn release(self) -> I {
        self.i2c
    }
}

/// Degrees Celsius from the two bytes of the temperature register.
pub fn celsius_from_register(bytes: [u8; 2]) -> f32 {
    // Arithmetic shift keeps the sign of the left-aligned 12-bit value.
    let raw = i16::from_be_bytes(bytes) >> 4;
    f32::from(raw) * CELSIUS_PER_LSB
}

/// The temperature register's two bytes for `celsius`, rounded to the nearest LSB and
/// saturated at the 12-bit range (−128 °C to +127.9375 °C).
pub fn register_from_celsius(celsius: f32) -> [u8; 2] {
    let lsb = (celsius / CELSIUS_PER_LSB).round();
    let raw = if lsb.is_nan() {
        0
    } else {
        // `as` saturates; then clamp to 12 bits.
        (lsb as i32).clamp(-2048, 2047) as i16
    };
    (raw << 4).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use embedded_hal::i2c::ErrorKind;
    use embedded_hal_mock::eh1::i2c::{Mock, Transaction};

    #[test]
    fn datasheet_codes_decode() {
        // TMP102 datasheet table: 0x7FF = 127.9375, 0x190 = 25, 0x004 = 0.25,
        // 0xFFC = -0.25, 0xE70 = -25, 0xC90 = -55.
        let cases: [(u16, f32); 6] = [
            (0x7FF, 127.9375),
            (0x190, 25.0),
            (0x004, 0.25),
            (0xFFC, -0.25),
            (0xE70, -25.0),
            (0xC90, -55.0),
        ];
        for (code, c) in cases {
            let bytes = (code << 4).to_be_bytes();
            assert_eq!(celsius_from_register(bytes), c, "{code:#x}");
            assert_eq!(register_from_celsius(c), bytes, "{c}");
        }
        assert_eq!(register_from_celsius(500.0), (0x7FFu16 << 4).to_be_bytes());
        assert_eq!(register_from_celsius(-500.0), (0x800u16 << 4).to_be_bytes());
    }

    #[test]
    fn reads_the_temperature_register_at_its_address() {
        let expect = [
            Transaction::write_read(0x49, vec![REG_TEMPERATURE], vec![0x19, 0x00]),
            Transaction::write_read(0x49, vec![REG_TEMPERATURE], vec![0xE7, 0x00]),
            Transaction::write_read(0x49, vec![REG_TEMPERATURE], vec![0, 0])
                .with_error(ErrorKind::Bus),
        ];
        let mut s = Tmp102::new(Mock::new(&expect), 0x49).unwrap();
        assert_eq!(s.address(), 0x49);
        assert_eq!(s.read_celsius().unwrap(), 25.0);
        assert_eq!(s.read_celsius().unwrap(), -25.0);
        assert_eq!(s.read_celsius().unwrap_err(), ErrorKind::Bus);
        s.release().done();
    }

    #[test]
    fn rejects_ten_bit_address() {
        let mut m = Mock::new(&[]);
        assert_eq!(Tmp102::new(m.clone(), 0x80).unwrap_err(), BadAddress(0x80));
        m.done();
    }
}
