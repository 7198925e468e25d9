/*
 * pinmap.h - where the motors, encoders and IMU sit on each supported board.
 *
 * Plain C with no AVR headers: the sketch includes it to configure its pins and the
 * simavr bridge (firmware/simavr_bridge) includes the same file to drive the encoder
 * inputs and read the motor pins back, so the two can never disagree.
 *
 * Ports are letters ('B', 'D', ...), bits are 0..7. Register addresses are data-space
 * addresses (identical for Timer1 on the ATmega328P and the ATmega32U4).
 *
 * ATmega32U4 (A-Star 32U4 / Zumo 32U4 wiring, thesis 4.3.1): each encoder's channels
 * A and B are XOR-ed onto one interrupt-capable pin, channel B goes to a plain input;
 * the firmware recovers A = (A ^ B) ^ B.
 *   left  motor  PWM PB6 (OC1B, D10), DIR PB2 (D16)
 *   right motor  PWM PB5 (OC1A, D9),  DIR PB1 (D15)
 *   left  enc    XOR PB4 (PCINT4, D8), B PE2
 *   right enc    XOR PE6 (INT6, D7),   B PF0 (A5)
 *   IMU          TWI (SDA PD1 / SCL PD0), link on Serial1 (RX PD2 / TX PD3)
 * ATmega328P (Uno + a dual motor shield, same XOR-ed encoder scheme):
 *   left  motor  PWM PB1 (OC1A, D9),  DIR PD7 (D7)
 *   right motor  PWM PB2 (OC1B, D10), DIR PB0 (D8)
 *   left  enc    XOR PD2 (INT0, D2), B PD4 (D4)
 *   right enc    XOR PD3 (INT1, D3), B PD5 (D5)
 *   IMU          TWI (SDA PC4 / SCL PC5), link on Serial (RX PD0 / TX PD1)
 */
#ifndef ROBOT_LINK_PINMAP_H
#define ROBOT_LINK_PINMAP_H

/* Timer1 registers (data-space addresses, same on both MCUs). */
#define PINMAP_TCCR1A_ADDR 0x80
#define PINMAP_ICR1L_ADDR 0x86
#define PINMAP_OCR1AL_ADDR 0x88
#define PINMAP_OCR1BL_ADDR 0x8A
#define PINMAP_COM1A1_BIT 7
#define PINMAP_COM1B1_BIT 5

/* Motor duty commands are in 1/PINMAP_PWM_TOP of full PWM (+-400, like Pololu's motor
 * libraries). Timer1 runs fast PWM with TOP = ICR1 = 799 at 16 MHz -> 20 kHz, so
 * OCR1x = 2 * duty and the duty fraction read back is OCR1x / (ICR1 + 1). */
#define PINMAP_PWM_TOP 400
#define PINMAP_OCR_PER_DUTY 2
#define PINMAP_ICR1_VALUE (PINMAP_PWM_TOP * PINMAP_OCR_PER_DUTY - 1)

/* PORTx data-space address from the port letter ('B'..'F'): the same on both MCUs.
 * PINx is PORTx - 2, DDRx is PORTx - 1. */
#define PINMAP_PORT_ADDR(letter) (0x25 + 3 * ((letter) - 'B'))

/* Board identifiers reported in the HELLO/STATUS messages. */
#define BOARD_ID_UNO_328P 1
#define BOARD_ID_32U4 2

/* Per-board map, selected by the MCU name the bridge gets with -m, or by the compiler. */
typedef struct pinmap_t {
    int board_id;
    char left_pwm_ocr;      /* 'A' or 'B': which Timer1 compare unit drives the left PWM */
    char right_pwm_ocr;
    char left_dir_port;  int left_dir_bit;
    char right_dir_port; int right_dir_bit;
    char left_xor_port;  int left_xor_bit;
    char left_b_port;    int left_b_bit;
    char right_xor_port; int right_xor_bit;
    char right_b_port;   int right_b_bit;
} pinmap_t;

#define PINMAP_32U4 { BOARD_ID_32U4, 'B', 'A', \
    'B', 2,  'B', 1,  'B', 4,  'E', 2,  'E', 6,  'F', 0 }
#define PINMAP_UNO { BOARD_ID_UNO_328P, 'A', 'B', \
    'D', 7,  'B', 0,  'D', 2,  'D', 4,  'D', 3,  'D', 5 }

#endif
